import { describe, expect, it } from 'vitest';
import {
  FrozenLakeEnv,
  isGoalReachable,
  parseFrozenLakeMap,
  planFrozenLake,
  renderFrozenLake,
} from '../../../envs/frozenlake';
import { makeEnv } from '../../../envs/index';
import { Rng } from '../../../envs/random';

const lake = (config?: Record<string, unknown>) => makeEnv('FrozenLake', config) as FrozenLakeEnv;
const deterministic = (map: string) => lake({ map, successRate: 1 });

describe('FrozenLake dynamics (successRate 1)', () => {
  const MAP = 'P_O\n__G';

  it('renders the map: P player, _ frozen, O hole, G goal', () => {
    const env = deterministic(MAP);
    expect(env.reset(0)).toBe('P_O\n__G');
  });

  it('walking into the border leaves the player in place (not effective, no reward)', () => {
    const env = deterministic(MAP);
    env.reset(0);
    for (const action of ['Left', 'Up']) {
      expect(env.step(action)).toEqual({
        observation: 'P_O\n__G',
        reward: 0,
        done: false,
        info: { success: false, actionIsValid: true, actionIsEffective: false },
      });
    }
  });

  it('entering a hole ends the episode without reward and renders X; later steps change nothing', () => {
    const env = deterministic(MAP);
    env.reset(0);
    expect(env.step('Right')).toMatchObject({
      observation: '_PO\n__G',
      done: false,
      info: { actionIsEffective: true },
    });
    expect(env.step('Right')).toEqual({
      observation: '__X\n__G',
      reward: 0,
      done: true,
      info: { success: false, actionIsValid: true, actionIsEffective: true },
    });
    expect(env.step('Down')).toEqual({
      observation: '__X\n__G',
      reward: 0,
      done: true,
      info: { success: false, actionIsValid: true, actionIsEffective: false },
    });
  });

  it('reaching the goal pays 1, ends the episode and renders √ (the start cell renders as _)', () => {
    const env = deterministic(MAP);
    env.reset(0);
    expect(env.step('down').observation).toBe('__O\nP_G');
    expect(env.step('RIGHT').observation).toBe('__O\n_PG');
    expect(env.step(' Right ')).toEqual({
      observation: '__O\n__√',
      reward: 1,
      done: true,
      info: { success: true, actionIsValid: true, actionIsEffective: true },
    });
  });

  it('any text that is not an action name is invalid and changes nothing', () => {
    const env = deterministic(MAP);
    env.reset(0);
    for (const junk of ['', 'left || up', 'Go left', '1', 'Leftt', '<answer>Left</answer>']) {
      expect(env.step(junk)).toEqual({
        observation: 'P_O\n__G',
        reward: 0,
        done: false,
        info: { success: false, actionIsValid: false, actionIsEffective: false },
      });
    }
  });
});

describe('FrozenLake slipping', () => {
  // Up from the centre of an open 3x3 lake: intended Up, or perpendicular Left / Right; never Down.
  const OPEN = '___\n_P_\n__G';
  const outcomes = (successRate: number, n: number) => {
    const env = lake({ map: OPEN, successRate });
    const counts: Record<string, number> = {};
    for (let seed = 0; seed < n; seed++) {
      env.reset(seed);
      const text = env.step('Up').observation;
      const where = { '_P_\n___\n__G': 'Up', '___\nP__\n__G': 'Left', '___\n__P\n__G': 'Right' }[text] ?? text;
      counts[where] = (counts[where] ?? 0) + 1;
    }
    return counts;
  };

  it('successRate 1/3 (v1 default): intended and each perpendicular move 1/3 each', () => {
    const n = 3000;
    const counts = outcomes(1 / 3, n);
    expect(Object.keys(counts).sort()).toEqual(['Left', 'Right', 'Up']);
    // Binomial(3000, 1/3): s.d. ≈ 25.8; allow 4 s.d. (a wrong split such as 0.4 / 0.3 / 0.3 is 7.7 s.d. off).
    for (const k of ['Up', 'Left', 'Right']) expect(Math.abs(counts[k] - n / 3)).toBeLessThan(103);
  });

  it('successRate 0.8: 0.8 intended, 0.1 each side', () => {
    const n = 3000;
    const counts = outcomes(0.8, n);
    // 4 s.d. bands: s.d. ≈ 21.9 for Up, ≈ 16.4 for each side.
    expect(Math.abs(counts.Up - 0.8 * n)).toBeLessThan(88);
    expect(Math.abs(counts.Left - 0.1 * n)).toBeLessThan(66);
    expect(Math.abs(counts.Right - 0.1 * n)).toBeLessThan(66);
  });

  it('the same seed replays the same slips; the map and slips are reproducible across instances', () => {
    const rng = Rng.fromSeed(11, 'test/actions');
    for (let seed = 100; seed < 130; seed++) {
      const a = lake();
      const b = lake();
      expect(a.reset(seed)).toBe(b.reset(seed));
      for (let t = 0; t < 10; t++) {
        const action = a.actionNames[rng.int(4)];
        expect(a.step(action)).toEqual(b.step(action));
      }
    }
  });
});

describe('FrozenLake map generation', () => {
  it('4x4 maps with one start and one distinct goal, always reachable', () => {
    const env = lake();
    for (let seed = 0; seed < 500; seed++) {
      const text = env.reset(seed);
      const rows = text.split('\n');
      expect(rows).toHaveLength(4);
      expect(rows.every((r) => [...r].length === 4)).toBe(true);
      expect(text.match(/P/g)).toHaveLength(1);
      expect(text.match(/G/g)).toHaveLength(1);
      expect(isGoalReachable(env.map)).toBe(true);
    }
  });

  it('different seeds give different maps (mostly); size and p are honoured', () => {
    const env = lake();
    const maps = new Set<string>();
    for (let seed = 0; seed < 100; seed++) maps.add(env.reset(seed));
    expect(maps.size).toBeGreaterThan(90);

    expect(
      lake({ size: 6 })
        .reset(1)
        .split('\n')
        .map((r) => r.length),
    ).toEqual([6, 6, 6, 6, 6, 6]);
    const noHoles = lake({ p: 1 });
    for (let seed = 0; seed < 50; seed++) expect(noHoles.reset(seed)).not.toContain('O');
  });

  it('random play succeeds within 10 actions on about 21.9% of maps (spec §10.16)', () => {
    const env = lake();
    const policy = Rng.fromSeed(5, 'test/random-play');
    const n = 2000;
    let wins = 0;
    for (let seed = 0; seed < n; seed++) {
      env.reset(seed);
      for (let t = 0; t < 10; t++) {
        const r = env.step(env.actionNames[policy.int(4)]);
        if (r.done) {
          if (r.info.success) wins++;
          break;
        }
      }
    }
    // Binomial s.d. at n = 2000 is ≈ 0.9 points; the band allows for that and for our own map/slip streams.
    expect(wins / n).toBeGreaterThan(0.17);
    expect(wins / n).toBeLessThan(0.27);
  });
});

describe('FrozenLake map validation', () => {
  it.each([
    ['P_\nPG', /2 players/],
    ['P_\n__', /0 goals/],
    ['PG\nG_', /2 goals/],
    ['P_\n_G_', /not rectangular/],
    ['P_\n_H\nG_', /unknown symbol 'H' at row 2, column 2/],
    ['PO\nOG', /no hole-free path/],
    ['', /empty/],
  ])('map %j is rejected', (map, message) => {
    expect(() => lake({ map })).toThrow(message);
  });

  it('accepts an array of rows and renders it back', () => {
    const map = parseFrozenLakeMap(['P__', '_O_', '__G']);
    expect(renderFrozenLake(map, map.start)).toBe('P__\n_O_\n__G');
    expect(renderFrozenLake(map, 4)).toBe('___\n_X_\n__G');
  });

  it('bad config values name the key', () => {
    expect(() => lake({ size: 1 })).toThrow(/'size' must be an integer from 2 to 20/);
    expect(() => lake({ p: 0 })).toThrow(/'p' must be a number in \(0, 1\]/);
    expect(() => lake({ successRate: 1.5 })).toThrow(/'successRate'/);
    expect(() => lake({ slippery: true })).toThrow(/unknown config key 'slippery'.*size, p, successRate, map/);
    expect(() => lake().step('Left')).toThrow(/reset/);
  });
});

describe('planFrozenLake', () => {
  it('one step from the goal: success 1 − (1 − rate)^k for the best action (hand-computed)', () => {
    // 'PG': Right reaches G with probability s; its perpendiculars (Up, Down) bump the border and stay.
    const map = parseFrozenLakeMap('PG');
    const sure = planFrozenLake(map, 0.8, 3);
    expect(sure.successProbability(map.start, 1)).toBeCloseTo(0.8, 12);
    expect(sure.successProbability(map.start, 2)).toBeCloseTo(0.96, 12);
    expect(sure.bestAction(map.start, 2)).toBe('Right');

    // With s = 1/3, Up and Down slip Right with probability 1/3 too: three actions tie, Left is worst.
    const slippery = planFrozenLake(map, 1 / 3, 5);
    for (let k = 0; k <= 5; k++) expect(slippery.successProbability(map.start, k)).toBeCloseTo(1 - (2 / 3) ** k, 12);
    expect(slippery.bestAction(map.start, 3)).not.toBe('Left');
    expect(slippery.bestAction(map.start, 0)).toBeNull();
    expect(slippery.bestAction(map.goal, 3)).toBeNull();
  });

  it('successRate 1: success iff the shortest path fits the budget, and bestAction walks it', () => {
    const MAP = 'P___\nOO_O\nG___'; // shortest path: 6 moves around the holes
    const map = parseFrozenLakeMap(MAP);
    const plan = planFrozenLake(map, 1, 10);
    expect(plan.successProbability(map.start, 5)).toBe(0);
    expect(plan.successProbability(map.start, 6)).toBe(1);
    expect(plan.successProbability(map.start, 10)).toBe(1);

    const env = deterministic(MAP);
    env.reset(0);
    let steps = 0;
    for (let left = 10; left > 0 && !env.done; left--, steps++) env.step(plan.bestAction(env.position, left)!);
    expect(env.position).toBe(map.goal);
    expect(steps).toBe(6);
  });

  it('predicts the success rate of closed-loop play in the env', () => {
    const MAP = 'P_O_\n____\n_O__\n___G';
    const map = parseFrozenLakeMap(MAP);
    const plan = planFrozenLake(map, 1 / 3, 10);
    const predicted = plan.successProbability(map.start, 10);
    const env = lake({ map: MAP });
    const n = 3000;
    let wins = 0;
    for (let seed = 0; seed < n; seed++) {
      env.reset(seed);
      for (let left = 10; left > 0 && !env.done; left--) env.step(plan.bestAction(env.position, left)!);
      if (env.position === map.goal) wins++;
    }
    const sd = Math.sqrt((predicted * (1 - predicted)) / n);
    expect(Math.abs(wins / n - predicted)).toBeLessThan(4 * sd);
  });

  it('optimal closed-loop success over generated maps ≈ 51.1% (10 actions) and 30.2% (5) (spec §10.17)', () => {
    const env = lake();
    let ten = 0;
    let five = 0;
    const n = 400;
    for (let seed = 0; seed < n; seed++) {
      env.reset(seed);
      const plan = planFrozenLake(env.map, 1 / 3, 10);
      ten += plan.successProbability(env.map.start, 10);
      five += plan.successProbability(env.map.start, 5);
      expect(plan.successProbability(env.map.start, 10)).toBeGreaterThanOrEqual(
        plan.successProbability(env.map.start, 5),
      );
    }
    expect(ten / n).toBeGreaterThan(0.46);
    expect(ten / n).toBeLessThan(0.56);
    expect(five / n).toBeGreaterThan(0.25);
    expect(five / n).toBeLessThan(0.35);
  });

  it('rejects bad queries', () => {
    const plan = planFrozenLake(parseFrozenLakeMap('PG'), 1, 2);
    expect(() => plan.successProbability(5, 1)).toThrow(/no cell 5/);
    expect(() => plan.bestAction(0, 3)).toThrow(/actionsLeft/);
    expect(() => planFrozenLake(parseFrozenLakeMap('PG'), 2, 2)).toThrow(/successRate/);
  });
});
