// The scorecard's ceiling (src/eval/optimum.ts) and the scripted optimal agent that plays it (src/eval/scripted.ts):
// the agent, played through the real agent protocol, reaches on average what the planner says it can; the
// scorecard's `optimum` column matches independent counts (BFS for Sokoban, the closed-loop planner where open loop
// costs nothing); fewer moves per answer or fewer turns lower the ceiling.
import { describe, expect, it } from 'vitest';
import {
  FrozenLakeEnv,
  SokobanEnv,
  makeEnv,
  parseFrozenLakeMap,
  planFrozenLake,
  planFrozenLakeTurns,
  solveSokoban,
} from '../../../envs/index';
import { agentFormatFromConfig } from '../../../src/starpo/config';
import { presetConfig } from '../../../src/starpo/presets';
import {
  optimalSuccess,
  runScorecard,
  scriptedOptimalPolicy,
  scriptedRandomPolicy,
  type AgentFormat,
  type EvalProtocol,
  type EvalSuite,
} from '../../../src/eval/index';
import { validationLakes } from '../envs/validation-lakes';

/** frozenlake-tiny's agent protocol (RAGEN's 5 turns x 5 actions, 10 per episode), as the preset has it. */
const FORMAT: AgentFormat = agentFormatFromConfig(presetConfig('frozenlake-tiny'));
const protocol = (episodes: number, over: Partial<EvalProtocol> = {}): EvalProtocol => ({
  episodes,
  k: 1,
  baseSeed: 123,
  temperature: 0.5,
  seed: 0,
  batchSize: 64,
  ...over,
});
const suite = (tag: string, over: Partial<EvalSuite> = {}): EvalSuite => ({
  name: tag,
  kind: 'held-out',
  tag,
  description: tag,
  ...over,
});

/** |observed - expected| in standard deviations of a sum of independent Bernoulli(p_i), as a rate over n. */
function zScore(successes: number, probabilities: readonly number[]): number {
  const mean = probabilities.reduce((a, p) => a + p, 0);
  const variance = probabilities.reduce((a, p) => a + p * (1 - p), 0);
  return Math.abs(successes - mean) / Math.sqrt(variance);
}

describe('scripted optimal agent on FrozenLake: plays the turn planner and earns its value', () => {
  it('one slippery lake, 1000 episodes (slips differ per seed): success matches the exact probability', async () => {
    // 2 turns of up to 3 blind moves, 6 moves in all: a protocol where open loop really costs.
    const rows = ['P_O', '___', 'O_G'];
    const format: AgentFormat = { ...FORMAT, maxTurn: 2, maxActionsPerTurn: 3 };
    const lake = suite('FrozenLake', { name: 'fixed-lake', config: { map: rows }, maxActionsPerTraj: 6 });
    const map = parseFrozenLakeMap(rows);
    const planner = planFrozenLakeTurns(map, 1 / 3, { maxTurn: 2, maxActionsPerTurn: 3, maxActionsPerTraj: 6 });
    const exact = planner.successProbability(map.start, 6, 2);
    // Strictly below looking after every move, strictly above 0: the test can tell the two apart.
    expect(exact).toBeGreaterThan(0.1);
    expect(exact).toBeLessThan(planFrozenLake(map, 1 / 3, 6).successProbability(map.start, 6) - 0.01);

    const card = await runScorecard(scriptedOptimalPolicy(), [lake], protocol(1000, { batchSize: 200 }), format);
    const s = card.suites[0];
    expect(s.optimum).toBeCloseTo(exact, 12);
    expect(zScore(s.success.successes, Array(1000).fill(exact))).toBeLessThan(4);
    // Run again: the same episodes (seeded slips, a deterministic planner).
    const again = await runScorecard(scriptedOptimalPolicy(), [lake], protocol(1000, { batchSize: 200 }), format);
    expect(again.suites[0].success.successes).toBe(s.success.successes);
  });

  it("its first answer is the planner's best answer, several moves long", async () => {
    const rows = ['P_O', '___', 'O_G'];
    const format: AgentFormat = { ...FORMAT, maxTurn: 2, maxActionsPerTurn: 3 };
    const lake = suite('FrozenLake', { name: 'fixed-lake', config: { map: rows }, maxActionsPerTraj: 6 });
    const played: string[][] = [];
    await runScorecard(scriptedOptimalPolicy(), [lake], protocol(4), format, {
      onEpisodes: (_suite, trajectories) => void played.push(...trajectories.map((t) => t.turns[0].parsedActions)),
    });
    const map = parseFrozenLakeMap(rows);
    const best = planFrozenLakeTurns(map, 1 / 3, { maxTurn: 2, maxActionsPerTurn: 3, maxActionsPerTraj: 6 }).bestAnswer(
      map.start,
      6,
      2,
    );
    expect(best.length).toBeGreaterThan(1);
    expect(played).toHaveLength(4);
    for (const first of played) expect(first).toEqual(best);
  });

  it("frozenlake-tiny's protocol on seeds 123-378: success within noise of the optimum, which beats one move per turn", async () => {
    const card = await runScorecard(scriptedOptimalPolicy(), [suite('FrozenLake')], protocol(256), FORMAT);
    const s = card.suites[0];
    const { mean, perSeed } = optimalSuccess(suite('FrozenLake'), { baseSeed: 123, episodes: 256 }, FORMAT);
    expect(s.optimum).toBe(mean);
    expect(zScore(s.success.successes, perSeed)).toBeLessThan(4);
    // Independent bounds (the closed-loop planner): with 5 looks and 5 moves at most, with a look after each of 10.
    let closed5 = 0;
    let closed10 = 0;
    for (const { env, closed } of validationLakes()) {
      closed5 += closed.successProbability(env.map.start, 5) / 256;
      closed10 += closed.successProbability(env.map.start, 10) / 256;
    }
    expect(s.optimum).toBeGreaterThan(closed5 + 0.1);
    expect(s.optimum).toBeLessThan(closed10);
    // One move per answer: the ceiling is the closed-loop optimum with 5 moves, and the agent plays to it.
    const single = await runScorecard(scriptedOptimalPolicy(), [suite('FrozenLake')], protocol(256), {
      ...FORMAT,
      maxActionsPerTurn: 1,
    });
    expect(single.suites[0].optimum).toBeCloseTo(closed5, 12);
    expect(
      zScore(
        single.suites[0].success.successes,
        optimalSuccess(suite('FrozenLake'), { baseSeed: 123, episodes: 256 }, { maxTurn: 5, maxActionsPerTurn: 1 })
          .perSeed,
      ),
    ).toBeLessThan(4);
    // Random play lies well below either ceiling, and the optimum column does not depend on who plays.
    const random = await runScorecard(scriptedRandomPolicy(), [suite('FrozenLake')], protocol(256), FORMAT);
    expect(random.suites[0].optimum).toBe(s.optimum);
    expect(random.suites[0].success.rate).toBeLessThan(closed5);
  }, 60_000);

  it('deterministic ice: the optimum is the fraction of lakes whose goal is within the budget', async () => {
    const noSlip = suite('FrozenLake', { name: 'FrozenLake-NoSlip', config: { successRate: 1 } });
    const card = await runScorecard(scriptedOptimalPolicy(), [noSlip], protocol(64), FORMAT);
    let reachable = 0;
    for (let seed = 123; seed < 123 + 64; seed++) {
      const env = makeEnv('FrozenLake', { successRate: 1 }) as FrozenLakeEnv;
      env.reset(seed);
      reachable += planFrozenLake(env.map, 1, 10).successProbability(env.map.start, 10);
    }
    expect(card.suites[0].optimum).toBe(reachable / 64);
    expect(card.suites[0].success.successes).toBe(reachable);
  });
});

describe('the optimum of Sokoban and Bandit', () => {
  it('Sokoban: levels the BFS solves within min(budget, turns x moves per answer); the scripted agent solves exactly those', async () => {
    const solvableWithin = (moves: number) => {
      let n = 0;
      for (let seed = 123; seed < 123 + 48; seed++) {
        const env = makeEnv('SimpleSokoban') as SokobanEnv;
        env.reset(seed);
        if (solveSokoban(env.state, moves) !== null) n++;
      }
      return n;
    };
    const tiny = await runScorecard(scriptedOptimalPolicy(), [suite('SimpleSokoban')], protocol(48), {
      ...FORMAT,
      maxTurn: 3,
    });
    expect(tiny.suites[0].optimum).toBe(solvableWithin(10) / 48); // 3 turns x 5 moves cover the 10-move budget
    expect(tiny.suites[0].success.successes).toBe(solvableWithin(10));
    // One turn of 5 moves: only the levels solvable in 5, fewer of them.
    const oneTurn = await runScorecard(scriptedOptimalPolicy(), [suite('SimpleSokoban')], protocol(48), {
      ...FORMAT,
      maxTurn: 1,
    });
    expect(solvableWithin(5)).toBeLessThan(solvableWithin(10));
    expect(oneTurn.suites[0].optimum).toBe(solvableWithin(5) / 48);
    expect(oneTurn.suites[0].success.successes).toBe(solvableWithin(5));
  });

  it('Bandit: 1', async () => {
    const card = await runScorecard(scriptedRandomPolicy(), [suite('Bandit')], protocol(8), {
      ...FORMAT,
      maxTurn: 1,
      maxActionsPerTurn: 1,
    });
    expect(card.suites[0].optimum).toBe(1);
  });
});
