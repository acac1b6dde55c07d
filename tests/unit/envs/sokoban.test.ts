import { describe, expect, it } from 'vitest';
import { makeEnv } from '../../../envs/index';
import { SokobanEnv, parseSokobanLevel, renderSokoban, solveSokoban } from '../../../envs/sokoban/index';

const withLevel = (level: string, config: Record<string, unknown> = {}, tag = 'SimpleSokoban') =>
  makeEnv(tag, { level, ...config }) as SokobanEnv;

/** Runs actions and returns the rewards. */
const play = (env: SokobanEnv, actions: string[]) => actions.map((a) => env.step(a).reward);
const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);

describe('Sokoban dynamics on hand-written levels', () => {
  it('walking: floor moves the player, a wall stops it; every step costs 0.1', () => {
    const env = withLevel('#####\n#P__#\n#_X_#\n#_O_#\n#####');
    env.reset(0);
    expect(env.step('Up')).toEqual({
      observation: '#####\n#P__#\n#_X_#\n#_O_#\n#####',
      reward: -0.1,
      done: false,
      info: { success: false, actionIsValid: true, actionIsEffective: false },
    });
    expect(env.step('Right')).toEqual({
      observation: '#####\n#_P_#\n#_X_#\n#_O_#\n#####',
      reward: -0.1,
      done: false,
      info: { success: false, actionIsValid: true, actionIsEffective: true },
    });
  });

  it('solving one box in 3 moves sums to 10.7 (−0.1 −0.1 +10.9), as in RAGEN', () => {
    const env = withLevel('#######\n#P__XO#\n#######');
    env.reset(0);
    const rewards = play(env, ['Right', 'Right']);
    const last = env.step('Right');
    expect(last).toEqual({
      observation: '#######\n#___P√#\n#######',
      reward: 10.9,
      done: true,
      info: { success: true, actionIsValid: true, actionIsEffective: true },
    });
    expect(sum([...rewards, last.reward])).toBeCloseTo(10.7, 12);
  });

  it('a failed 10-action episode sums to −1.0', () => {
    const env = withLevel('#######\n#P__XO#\n#######');
    env.reset(0);
    const rewards = play(env, ['Left', 'Up', 'Down', 'Left', 'Right', 'Left', 'Up', 'Up', 'Down', 'Left']);
    expect(sum(rewards)).toBeCloseTo(-1.0, 12);
    expect(env.done).toBe(false);
  });

  it('pushing a box into a wall or into another box does nothing (still costs a step)', () => {
    const intoWall = withLevel('#######\n#_____#\n#_PX#_#\n#___O_#\n#######');
    intoWall.reset(0);
    expect(intoWall.step('Right')).toMatchObject({
      observation: '#######\n#_____#\n#_PX#_#\n#___O_#\n#######',
      reward: -0.1,
      info: { actionIsEffective: false },
    });
    const intoBox = withLevel('#######\n#_____#\n#PXX__#\n#_____#\n#_OO__#\n#######');
    intoBox.reset(0);
    expect(intoBox.step('Right')).toMatchObject({
      observation: '#######\n#_____#\n#PXX__#\n#_____#\n#_OO__#\n#######',
      reward: -0.1,
      info: { actionIsEffective: false },
    });
  });

  it('box onto a target +1, off it again −1; the player on a target renders S', () => {
    const env = withLevel('#######\n#PXO__#\n#__XO_#\n#######');
    env.reset(0);
    let r = env.step('Right'); // box onto the first target
    expect(r.observation).toBe('#######\n#_P√__#\n#__XO_#\n#######');
    expect(r.reward).toBeCloseTo(0.9, 12);
    expect(r.info.success).toBe(false);
    r = env.step('Right'); // pushed off again; the player now stands on the target
    expect(r.observation).toBe('#######\n#__SX_#\n#__XO_#\n#######');
    expect(r.reward).toBeCloseTo(-1.1, 12);
    play(env, ['Left', 'Down']); // player to (2,2), left of the second box
    r = env.step('Right'); // second box onto its target: one of two boxes placed again
    expect(r.reward).toBeCloseTo(0.9, 12);
    expect(r.observation).toBe('#######\n#__OX_#\n#__P√_#\n#######');
    expect(r.info.success).toBe(false);
  });

  it('solving the last of two boxes pays −0.1 + 1 + 10 and ends the episode', () => {
    const env = withLevel('######\n#_√__#\n#PXO_#\n######');
    env.reset(0);
    const r = env.step('Right');
    expect(r).toEqual({
      observation: '######\n#_√__#\n#_P√_#\n######',
      reward: 10.9,
      done: true,
      info: { success: true, actionIsValid: true, actionIsEffective: true },
    });
  });

  it('stepping a solved env keeps paying 9.9 with done (gym-sokoban; RAGEN never does this)', () => {
    const env = withLevel('#####\n#PXO#\n#####');
    env.reset(0);
    expect(env.step('Right').reward).toBeCloseTo(10.9, 12);
    expect(env.step('Left')).toMatchObject({ reward: 9.9, done: true, info: { success: true } });
  });

  it('done after maxSteps actions even when unsolved', () => {
    const env = withLevel('#######\n#P__XO#\n#######', { maxSteps: 3 });
    env.reset(0);
    expect(play(env, ['Left', 'Left']).length).toBe(2);
    expect(env.step('Left')).toMatchObject({ done: true, info: { success: false } });
    env.reset(0);
    expect(env.done).toBe(false);
  });

  it('an unwalled level treats the outside as wall', () => {
    const env = withLevel('_P__\nOX__');
    env.reset(0);
    expect(env.step('Up').info.actionIsEffective).toBe(false);
    expect(env.step('Down').info.actionIsEffective).toBe(false); // the box cannot leave the grid
    expect(env.render()).toBe('_P__\nOX__');
    expect(env.step('Left').info.actionIsEffective).toBe(true);
    expect(env.step('Left').info.actionIsEffective).toBe(false);
  });

  it('action names are case-insensitive; anything else is invalid, never throws, changes nothing', () => {
    const env = withLevel('#######\n#P__XO#\n#######');
    const start = env.reset(0);
    const junk = ['', 'up || down', '<answer>Right</answer>', 'R', 'rightt', 'Move right', '4', '\n'];
    for (const action of junk) {
      expect(env.step(action)).toEqual({
        observation: start,
        reward: 0,
        done: false,
        info: { success: false, actionIsValid: false, actionIsEffective: false },
      });
    }
    expect(env.step(undefined as unknown as string).info.actionIsValid).toBe(false);
    expect(env.stepCount).toBe(0);
    expect(env.step('right').info).toMatchObject({ actionIsValid: true, actionIsEffective: true });
    expect(env.step('  RIGHT ').info).toMatchObject({ actionIsValid: true, actionIsEffective: true });
  });

  it('step or render before reset throws', () => {
    expect(() => makeEnv('SimpleSokoban').step('Up')).toThrow(/reset/);
    expect(() => makeEnv('LargerSokoban').render()).toThrow(/reset/);
  });
});

describe('Sokoban rendering', () => {
  const LEVEL = '#######\n#__O__#\n#_X√__#\n#__SX_#\n#######'; // 3 boxes, 3 targets, player on a target

  it('the default vocabulary round-trips: # _ O √ X P S', () => {
    expect(renderSokoban(parseSokobanLevel(LEVEL))).toBe(LEVEL);
    expect(renderSokoban(parseSokobanLevel('#####\n#PXO#\n#####'))).toBe('#####\n#PXO#\n#####');
  });

  it('SokobanDifferentGridVocab renders W . G C B A @ for the same cells', () => {
    // Spec §2.2: 0 W, 1 ., 2 G, 3 C, 4 B, 5 A, 6 @.
    const env = withLevel(LEVEL, {}, 'SokobanDifferentGridVocab');
    expect(env.reset(0)).toBe('WWWWWWW\nW..G..W\nW.BC..W\nW..@B.W\nWWWWWWW');
    env.step('Left'); // the player leaves the target
    expect(env.render()).toBe('WWWWWWW\nW..G..W\nW.BC..W\nW.AGB.W\nWWWWWWW');
  });
});

describe('Sokoban level validation', () => {
  it.each([
    ['#####\n#PXO#\n#P__#\n#####', /2 players/],
    ['#####\n#PXO#\n#S__#\n#####', /2 players/],
    ['#####\n#_XO#\n#####', /0 players/],
    ['#####\n#P_O#\n#####', /no box/],
    ['######\n#PXXO#\n######', /2 boxes \(X \+ √\) but 1 targets/],
    ['######\n#PXOO#\n######', /1 boxes \(X \+ √\) but 2 targets/],
    ['#####\n#PXO#\n####', /not rectangular: row 3 has 4 cells, row 1 has 5/],
    ['#####\n#PXO#\n#_*_#\n#####', /unknown symbol '\*' at row 3, column 3/],
    ['#####\n#P√_#\n#####', /already solved/],
    ['', /empty/],
  ])('level %j is rejected', (level, message) => {
    expect(() => makeEnv('SimpleSokoban', { level })).toThrow(message);
  });

  it('accepts a level as an array of rows and tolerates \\r\\n and a trailing newline', () => {
    expect(withLevel(['####', '#P_#', '#X_#', '#O_#', '####'] as unknown as string).reset(0)).toBe(
      '####\n#P_#\n#X_#\n#O_#\n####',
    );
    expect(withLevel('####\r\n#P_#\r\n#X_#\r\n#O_#\r\n####\n').reset(0)).toBe('####\n#P_#\n#X_#\n#O_#\n####');
  });
});

describe('solveSokoban', () => {
  it('finds the shortest solution of hand-written levels', () => {
    expect(solveSokoban(parseSokobanLevel('#######\n#P__XO#\n#######'))).toEqual(['Right', 'Right', 'Right']);
    // The box must be pushed up from below it: step right, then push.
    expect(solveSokoban(parseSokobanLevel('#####\n#_O_#\n#_X_#\n#P__#\n#####'))).toEqual(['Right', 'Up']);
  });

  it('returns null for an unsolvable level or when the depth cap is too small', () => {
    expect(solveSokoban(parseSokobanLevel('#####\n#X_O#\n#_P_#\n#####'))).toBeNull(); // box stuck in a corner
    expect(solveSokoban(parseSokobanLevel('#######\n#P__XO#\n#######'), 2)).toBeNull();
    expect(solveSokoban(parseSokobanLevel('#######\n#P__XO#\n#######'), 3)).toHaveLength(3);
  });

  it('handles two boxes (the second push must not block the first)', () => {
    const level = '#######\n#P_X_O#\n#__X_O#\n#_____#\n#######';
    const path = solveSokoban(parseSokobanLevel(level))!;
    const env = withLevel(level);
    env.reset(0);
    let last = env.step(path[0]);
    for (const a of path.slice(1)) last = env.step(a);
    expect(last.info.success).toBe(true);
    // By hand: upper box first = 1 step + 2 pushes, then (1,4) -> (2,2) is at least 3 moves, then 2 pushes = 8;
    // lower box first = 2 + 2 + at least 3 back to (1,2) + 2 = 9. So 8 is optimal.
    expect(path).toHaveLength(8);
  });
});
