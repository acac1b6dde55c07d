// Scorecards of hand-built policies whose behaviour is known, so the numbers can be predicted independently:
// an optimal agent (BFS solver / planner / the hi arm), a random agent, an echo agent and one that never closes
// </answer>. No model here: these run in well under a second each.
import { describe, expect, it } from 'vitest';
import { FrozenLakeEnv, SokobanEnv, makeEnv, planFrozenLake, solveSokoban } from '../../../envs/index';
import {
  compareScorecards,
  defaultSuites,
  findRegressions,
  parseScorecardJson,
  runScorecard,
  scorecardToJson,
  scriptedOptimalPolicy,
  scriptedRandomPolicy,
  suitesForTag,
  type AgentFormat,
  type EvalProtocol,
  type EvalSuite,
  type ScorecardPolicy,
} from '../../../src/eval/index';
import { agentFormat } from '../agentFormat';

const FORMAT: AgentFormat = agentFormat();
const BANDIT_FORMAT: AgentFormat = { ...FORMAT, maxTurn: 1, maxActionsPerTurn: 1 };
const protocol = (over: Partial<EvalProtocol> = {}): EvalProtocol => ({
  episodes: 16,
  k: 1,
  baseSeed: 123,
  temperature: 0.5,
  seed: 0,
  batchSize: 8,
  ...over,
});
const suite = (tag: string, over: Partial<EvalSuite> = {}): EvalSuite => ({
  name: tag,
  kind: 'held-out',
  tag,
  description: tag,
  ...over,
});

/** A policy that always sends the same text, whatever the state. */
function constantPolicy(name: string, text: string): ScorecardPolicy {
  return { name, generateFn: () => async (prompts) => prompts.map(() => text) };
}

describe('scripted optimal agent', () => {
  it('Sokoban: solves exactly the levels solvable within the 10-action budget, with step efficiency 1', async () => {
    const card = await runScorecard(
      scriptedOptimalPolicy(),
      [suite('SimpleSokoban')],
      protocol({ episodes: 24 }),
      FORMAT,
    );
    const s = card.suites[0];
    // Independent count: BFS on each initial state with the budget as the depth limit.
    let solvable = 0;
    for (let seed = 123; seed < 123 + 24; seed++) {
      const env = makeEnv('SimpleSokoban') as SokobanEnv;
      env.reset(seed);
      if (solveSokoban(env.state, 10) !== null) solvable++;
    }
    expect(solvable).toBeGreaterThan(18); // the spec's 98.8 %: most levels are
    expect(s.success.successes).toBe(solvable);
    expect(s.stepEfficiency).toBe(1);
    expect(s.actionsPerSuccess).toBe(s.optimalActions);
    expect(s.formatErrorRate).toBe(0);
    expect(s.actionValidity).toBe(1);
    expect(s.success.lo).toBeLessThanOrEqual(s.success.rate);
    expect(s.success.hi).toBeGreaterThanOrEqual(s.success.rate);
  });

  it('FrozenLake without slips: succeeds where the goal is within 10 moves, along a shortest path', async () => {
    const noSlip = suite('FrozenLake', { name: 'FrozenLake-NoSlip', config: { successRate: 1 } });
    const card = await runScorecard(scriptedOptimalPolicy(), [noSlip], protocol(), FORMAT);
    let reachable = 0;
    for (let seed = 123; seed < 123 + 16; seed++) {
      const env = makeEnv('FrozenLake', { successRate: 1 }) as FrozenLakeEnv;
      env.reset(seed);
      if (planFrozenLake(env.map, 1, 10).successProbability(env.map.start, 10) === 1) reachable++;
    }
    expect(card.suites[0].success.successes).toBe(reachable);
    expect(card.suites[0].stepEfficiency).toBe(1);
  });

  it('Bandit: always the high arm, also when the names are swapped', async () => {
    const suites = defaultSuites([{ tag: 'Bandit' }]);
    const card = await runScorecard(scriptedOptimalPolicy(), suites, protocol(), BANDIT_FORMAT);
    for (const s of card.suites) {
      expect(s.success.rate, s.suite).toBe(1);
      expect(s.stepEfficiency, s.suite).toBe(1);
    }
  });
});

describe('scripted random agent', () => {
  it('Bandit: success about 0.5 inside its Wilson interval; pass@4 about 1 - 0.5^4', async () => {
    const card = await runScorecard(
      scriptedRandomPolicy(),
      [suite('Bandit')],
      protocol({ episodes: 100, k: 4, batchSize: 64 }),
      BANDIT_FORMAT,
    );
    const s = card.suites[0];
    expect(s.episodes).toBe(400);
    expect(s.success.lo).toBeLessThan(0.5);
    expect(s.success.hi).toBeGreaterThan(0.5);
    expect(Math.abs(s.success.rate - 0.5)).toBeLessThan(0.08); // 4 s.d. of 400 fair coins
    expect(s.passAtK).toBeGreaterThan(0.85);
    expect(s.passAtK).toBeLessThan(1);
    expect(s.actionValidity).toBe(1);
    expect(s.formatErrorRate).toBe(0);
  });

  it('is deterministic given the seed, and another seed plays differently', async () => {
    const run = (seed: number) =>
      runScorecard(scriptedRandomPolicy(), [suite('FrozenLake')], protocol({ seed }), FORMAT);
    const a = scorecardToJson(await run(1));
    expect(scorecardToJson(await run(1))).toBe(a);
    expect(scorecardToJson(await run(2))).not.toBe(a);
  });
});

describe('format and reasoning measures', () => {
  it('a policy that never closes </answer> has format-error rate 1 and no success', async () => {
    const card = await runScorecard(
      constantPolicy('unclosed', 'Go up.</think><answer>Up'),
      [suite('SimpleSokoban')],
      protocol({ episodes: 4 }),
      FORMAT,
    );
    const s = card.suites[0];
    expect(s.formatErrorRate).toBe(1);
    expect(s.success.rate).toBe(0);
    expect(s.meanTurns).toBe(5); // no action ever runs, so every turn is played
    expect(s.actionValidity).toBeNaN();
    // Every turn is penalised: score = reward - 0.1 per turn.
    expect(s.meanScore).toBeCloseTo(s.meanReward - 0.5, 9);
  });

  it('an echo policy scores reasoning diversity ~0; a state-dependent one does not', async () => {
    const echo = await runScorecard(
      constantPolicy('echo', 'I will go left now.</think><answer>Left</answer>'),
      [suite('FrozenLake')],
      protocol(),
      FORMAT,
    );
    const e = echo.suites[0];
    expect(e.diversity.pairwise).toBe(0);
    expect(e.diversity.distinct2).toBeLessThan(0.1);
    expect(e.diversity.uniqueFraction).toBeLessThan(0.1);
    expect(e.reasoningLength).toBe(5); // "I will go left now." in words
    const varied = await runScorecard(scriptedOptimalPolicy(), [suite('FrozenLake')], protocol(), FORMAT);
    expect(varied.suites[0].diversity.distinct2).toBeGreaterThan(3 * e.diversity.distinct2);
    expect(varied.suites[0].diversity.uniqueFraction).toBeGreaterThan(0.1);
    expect(varied.suites[0].diversity.pairwise).toBeGreaterThan(0.2);
  });
});

describe('baselines and the regression gate', () => {
  it('reports deltas in points and flags a suite that dropped by more than the threshold', async () => {
    const suites = defaultSuites([{ tag: 'Bandit' }]);
    const p = protocol({ episodes: 50 });
    const optimal = await runScorecard(scriptedOptimalPolicy(), suites, p, BANDIT_FORMAT);
    const random = await runScorecard(scriptedRandomPolicy(), suites, p, BANDIT_FORMAT);
    const cmp = compareScorecards(random, optimal);
    expect(cmp.deltas.map((d) => d.suite)).toEqual(['Bandit', 'BanditTest', 'Bandit-Swapped']);
    for (const d of cmp.deltas) {
      const r = random.suites.find((s) => s.suite === d.suite)!;
      expect(d.successPoints).toBeCloseTo(100 * (r.success.rate - 1), 9);
    }
    const drops = findRegressions(cmp, 10);
    expect(drops.map((r) => r.suite)).toEqual(['Bandit', 'BanditTest', 'Bandit-Swapped']);
    expect(findRegressions(cmp, 100)).toEqual([]);
    // The other way round it is an improvement: nothing regresses even at threshold 0.
    expect(findRegressions(compareScorecards(optimal, random), 0)).toEqual([]);
    // Equal scorecards pass a zero-tolerance gate.
    expect(findRegressions(compareScorecards(optimal, optimal), 0)).toEqual([]);
  });

  it('lists suites the baseline lacks and does not gate them', async () => {
    const p = protocol({ episodes: 4 });
    const current = await runScorecard(scriptedRandomPolicy(), defaultSuites([{ tag: 'Bandit' }]), p, BANDIT_FORMAT);
    const base = await runScorecard(scriptedOptimalPolicy(), [suite('Bandit')], p, BANDIT_FORMAT);
    const cmp = compareScorecards(current, base);
    expect(cmp.missingInBaseline).toEqual(['BanditTest', 'Bandit-Swapped']);
    expect(cmp.deltas).toHaveLength(1);
  });

  it('JSON round trip keeps NaN (written as null) and rejects a file that is no scorecard', async () => {
    const card = await runScorecard(
      constantPolicy('unclosed', 'x</think><answer>Up'),
      [suite('FrozenLake')],
      protocol({ episodes: 2 }),
      FORMAT,
    );
    const text = scorecardToJson(card);
    expect(text).toContain('"actionValidity": null');
    const back = parseScorecardJson(text);
    expect(back.suites[0].actionValidity).toBeNaN();
    expect(back.suites[0].success.rate).toBe(0);
    expect(() => parseScorecardJson('{"format":"other"}', 'x.json')).toThrow(/x\.json is not a scorecard/);
    expect(() => parseScorecardJson('{oops', 'y.json')).toThrow(/y\.json is not valid JSON/);
  });
});

describe('suites', () => {
  it('per training family: held-out first, then RAGEN-style out-of-distribution suites', () => {
    expect(defaultSuites([{ tag: 'SimpleSokoban' }]).map((s) => `${s.kind}:${s.name}`)).toEqual([
      'held-out:SimpleSokoban',
      'ood:LargerSokoban',
      'ood:SokobanDifferentGridVocab',
      'ood:FrozenLake',
    ]);
    const bandit = defaultSuites([{ tag: 'Bandit' }]);
    expect(bandit.map((s) => s.name)).toEqual(['Bandit', 'BanditTest', 'Bandit-Swapped']);
    expect(bandit[2].config).toEqual({ loArmName: 'Dragon', hiArmName: 'Phoenix' });
    expect(defaultSuites([{ tag: 'FrozenLake' }]).map((s) => s.name)).toEqual([
      'FrozenLake',
      'FrozenLake-NoSlip',
      'FrozenLake-6x6',
      'SimpleSokoban',
    ]);
  });

  it('a coordinate-trained agent meets its out-of-distribution suites in the same observation format', () => {
    const sokoban = defaultSuites([{ tag: 'CoordSokoban' }]);
    expect(sokoban.map((s) => `${s.kind}:${s.name}:${s.tag}`)).toEqual([
      'held-out:CoordSokoban:CoordSokoban',
      'ood:LargerSokoban:LargerSokoban',
      'ood:SokobanDifferentGridVocab:SokobanDifferentGridVocab',
      'ood:CoordFrozenLake:CoordFrozenLake',
    ]);
    expect(sokoban[1].config).toEqual({ observationFormat: 'grid_coord' });
    expect(makeEnv(sokoban[1].tag, sokoban[1].config).reset(123)).toMatch(
      /^Coordinates: \nBoard size: 8 rows x 8 cols/,
    );
    const lake = defaultSuites([{ tag: 'CoordFrozenLake' }]);
    expect(lake.map((s) => `${s.name}:${s.tag}`)).toEqual([
      'CoordFrozenLake:CoordFrozenLake',
      'CoordFrozenLake-NoSlip:CoordFrozenLake',
      'CoordFrozenLake-6x6:CoordFrozenLake',
      'CoordSokoban:CoordSokoban',
    ]);
    // 'coord' has no tag of its own: the format goes into the env config.
    const coordOnly = defaultSuites([{ tag: 'FrozenLake', config: { observationFormat: 'coord' } }]);
    expect(coordOnly.at(-1)).toMatchObject({
      name: 'SimpleSokoban',
      tag: 'SimpleSokoban',
      config: { observationFormat: 'coord' },
    });
    expect(coordOnly[1]).toMatchObject({
      name: 'FrozenLake-NoSlip',
      config: { observationFormat: 'coord', successRate: 1 },
    });
  });

  it('--env narrows to a tag, or makes an ad-hoc suite; unknown tags are named', () => {
    const suites = defaultSuites([{ tag: 'FrozenLake' }]);
    expect(suitesForTag(suites, 'FrozenLake', ['FrozenLake']).map((s) => s.name)).toEqual([
      'FrozenLake',
      'FrozenLake-NoSlip',
      'FrozenLake-6x6',
    ]);
    expect(suitesForTag(suites, 'LargerSokoban', ['FrozenLake'])).toMatchObject([
      { name: 'LargerSokoban', kind: 'ood' },
    ]);
    expect(() => suitesForTag(suites, 'Sokoban', ['FrozenLake'])).toThrow(/unknown env tag 'Sokoban'/);
    expect(() => defaultSuites([{ tag: 'Chess' }])).toThrow(/unknown env tag 'Chess'/);
  });

  it('runScorecard refuses a bad protocol or env config before playing', async () => {
    await expect(
      runScorecard(scriptedRandomPolicy(), [suite('Bandit')], protocol({ k: 0 }), BANDIT_FORMAT),
    ).rejects.toThrow(/k must be a positive integer/);
    await expect(
      runScorecard(scriptedRandomPolicy(), [suite('FrozenLake', { config: { size: 'big' } })], protocol(), FORMAT),
    ).rejects.toThrow(/size/);
  });
});
