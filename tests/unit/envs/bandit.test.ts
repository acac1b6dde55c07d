import { describe, expect, it } from 'vitest';
import { BanditEnv } from '../../../envs/bandit';
import { makeEnv } from '../../../envs/index';

// RAGEN's INIT_PROMPT for names a, b (ragen/env/bandit/env.py): trailing spaces after "pull.", "Rules:" and
// "names.", and a final newline.
const ragenPrompt = (
  a: string,
  b: string,
) => `You are playing a bandit game. Goal: Maximize your total reward by choosing which arm to pull. 
Game Rules: 
1. There are 2 arms, named ${a} and ${b}
2. Each arm has its own reward distribution, related to their names. 
3. Analyze the symbolic meaning of each arm's name to guess how their reward distribution might behave.
4. Based on the symbolic meaning of their names, which arm do you think is more likely to give higher rewards on average? Choose between ${a} and ${b}, and output like <answer> ${a} </answer> or <answer> ${b} </answer>.
`;

const bandit = (config?: Record<string, unknown>) => makeEnv('Bandit', config) as BanditEnv;

describe('Bandit', () => {
  it("emits RAGEN's prompt verbatim, with the arms in action-id order", () => {
    const env = bandit();
    const text = env.reset(5);
    expect(text).toBe(ragenPrompt(env.actionNames[0], env.actionNames[1]));
    expect([...env.actionNames].sort()).toEqual(['Dragon', 'Phoenix']);
    expect(env.render()).toBe(text);
  });

  it('BanditTest uses Trader (low) and Librarian (high)', () => {
    const env = makeEnv('BanditTest') as BanditEnv;
    env.reset(1);
    expect([...env.actionNames].sort()).toEqual(['Librarian', 'Trader']);
    expect(env.step('Librarian').info.success).toBe(true);
    env.reset(1);
    const lo = env.step('Trader');
    expect(lo.info.success).toBe(false);
    expect(lo.reward).toBe(0.1);
  });

  it('shuffles the arm order with the seed (about half the seeds put the high arm first)', () => {
    const env = bandit();
    const n = 2000;
    let hiFirst = 0;
    for (let seed = 0; seed < n; seed++) {
      env.reset(seed);
      if (env.actionNames[0] === 'Dragon') hiFirst++;
    }
    // Binomial(2000, 0.5): s.d. ≈ 22.4; allow 4 s.d.
    expect(Math.abs(hiFirst - n / 2)).toBeLessThan(90);
  });

  it('the low arm pays 0.1 and does not count as success; the observation names arm and payoff', () => {
    const env = bandit();
    env.reset(0);
    const r = env.step('Phoenix');
    expect(r).toEqual({
      observation: 'Phoenix: 0.1 points',
      reward: 0.1,
      done: true,
      info: { success: false, actionIsValid: true, actionIsEffective: true },
    });
    expect(env.render()).toBe('Phoenix: 0.1 points');
  });

  it('the high arm pays 1.0 with probability 0.25, else 0.0, and is always a success', () => {
    const env = bandit();
    const n = 4000;
    let paid = 0;
    for (let seed = 0; seed < n; seed++) {
      env.reset(seed);
      const r = env.step('dragon');
      expect(r.info.success).toBe(true);
      expect(r.done).toBe(true);
      expect([0, 1]).toContain(r.reward);
      expect(r.observation).toBe(r.reward === 1 ? 'Dragon: 1.0 points' : 'Dragon: 0.0 points');
      paid += r.reward;
    }
    // Binomial(4000, 0.25): s.d. ≈ 27.4; allow 4 s.d. (a payoff rate of 0.3 would be 7 s.d. off).
    expect(Math.abs(paid - n * 0.25)).toBeLessThan(110);
  });

  it('envs reset with the same seed share arm order and payoff draw (RAGEN v1 group behaviour)', () => {
    for (let seed = 0; seed < 50; seed++) {
      const a = bandit();
      const b = bandit();
      expect(a.reset(seed)).toBe(b.reset(seed));
      expect(a.step('Dragon').reward).toBe(b.step('Dragon').reward);
    }
  });

  it('matches arm names case-insensitively, ignoring surrounding spaces', () => {
    const env = bandit();
    for (const name of ['dragon', 'DRAGON', '  Dragon ']) {
      env.reset(3);
      expect(env.step(name).info).toMatchObject({ actionIsValid: true, success: true });
    }
  });

  it('treats any other text as an invalid action: no throw, no state change, not done', () => {
    const env = bandit();
    const text = env.reset(9);
    for (const junk of ['', 'Phoenix || Dragon', '<answer> Dragon </answer>', 'arm 1', '1', 'Dragonfly']) {
      const r = env.step(junk);
      expect(r).toEqual({
        observation: text,
        reward: 0,
        done: false,
        info: { success: false, actionIsValid: false, actionIsEffective: false },
      });
      expect(env.render()).toBe(text);
    }
    expect(env.step('Dragon').info.actionIsValid).toBe(true);
  });

  it("config: the paper's 0.15 low arm, custom names and payoffs", () => {
    const paper = bandit({ loArmScore: 0.15 });
    paper.reset(0);
    expect(paper.step('Phoenix')).toMatchObject({ reward: 0.15, observation: 'Phoenix: 0.15 points' });

    const custom = bandit({ loArmName: 'Teacher', hiArmName: 'Engineer', hiArmHiScoreProb: 1, hiArmHiScore: 2 });
    custom.reset(0);
    expect([...custom.actionNames].sort()).toEqual(['Engineer', 'Teacher']);
    expect(custom.step('Engineer')).toMatchObject({ reward: 2, observation: 'Engineer: 2.0 points' });
  });

  it('bad config and use before reset throw errors that name the problem', () => {
    expect(() => bandit({ loArmName: 'dragon' })).toThrow(/must differ/);
    expect(() => bandit({ hiArmHiScoreProb: 1.5 })).toThrow(/hiArmHiScoreProb.*\[0, 1\]/);
    expect(() => bandit({ loArmName: '' })).toThrow(/loArmName.*non-empty string/);
    expect(() => bandit({ numArms: 3 })).toThrow(/unknown config key 'numArms'.*loArmName/);
    expect(() => bandit().step('Dragon')).toThrow(/reset/);
  });
});
