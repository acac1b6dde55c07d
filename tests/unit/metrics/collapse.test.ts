// RAGEN-2's collapse diagnostics (src/metrics/collapse.ts with the model-side scorer src/starpo/collapseScoring.ts):
// every metric against a brute-force computation on a tiny random Qwen2 model (each (x, z) pair scored alone, the
// metrics written out loop by loop), and the sampling rules.
import * as tf from '@tensorflow/tfjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  FIRST_TURN_PREFIX,
  TRAJECTORY_PREFIX,
  collapseTrajectories,
  computeCollapseMetrics,
  crossScore,
  initialCollapseState,
  reasoningText,
  sampleFirstTurns,
  sampleTrajectoryUniform,
  shouldComputeCollapse,
  type CollapseSettings,
  type CollapseTrajectory,
  type ContinuationScorer,
} from '../../../src/metrics/collapse';
import { OPTIONAL_FIXED_KEYS } from '../../../src/metrics/keys';
import { initBackend } from '../../../src/model/backend';
import { Qwen2Model, initQwen2Weights } from '../../../src/model/qwen2';
import { tokenLogProbs } from '../../../src/model/scoring';
import { seededUniform } from '../../../src/model/seeded';
import { continuationLogProbSums } from '../../../src/starpo/collapseScoring';
import { tinyModelConfig } from '../starpo/trainer-fixture';

const VOCAB = 40;
const PAD = 0;
let model: Qwen2Model;

beforeAll(async () => {
  await initBackend('wasm');
  const config = tinyModelConfig(VOCAB);
  model = new Qwen2Model(config, initQwen2Weights(config, 11));
});
afterAll(() => model?.dispose());

const SETTINGS: CollapseSettings = {
  computeFreq: 5,
  numSamples: 'all',
  firstTurn: true,
  trajectory: true,
  stdEps: 1e-3,
  emaDecay: 0.9,
};

// Hand-built trajectories over token ids 1..39: four env groups, groups 2 and 3 start from the SAME prompt (as two
// seeds that happen to give the same board), some turns without valid thinking, a repeated reasoning, turns of
// different lengths.
const P = { a: [3, 4, 5, 6], b: [3, 7, 8], c: [9, 10, 11, 12, 13] };
const TRAJECTORIES: CollapseTrajectory[] = [
  {
    groupId: 0,
    turns: [
      { prompt: P.a, reasoning: [20, 21, 22] },
      { prompt: [...P.a, 30, 31], reasoning: [23, 24] },
    ],
  },
  { groupId: 0, turns: [{ prompt: P.a, reasoning: [20, 21] }] },
  {
    groupId: 1,
    turns: [
      { prompt: P.b, reasoning: [25] },
      { prompt: [...P.b, 32], reasoning: [] },
      { prompt: [...P.b, 32, 33], reasoning: [26, 27, 28, 29] },
    ],
  },
  {
    groupId: 1,
    turns: [
      { prompt: P.b, reasoning: [] },
      { prompt: [...P.b, 34], reasoning: [21, 22] },
    ],
  },
  { groupId: 2, turns: [{ prompt: P.c, reasoning: [20, 21, 22] }] },
  {
    groupId: 3,
    turns: [
      { prompt: P.c, reasoning: [35, 36, 37, 38, 39, 1] },
      { prompt: [...P.c, 2], reasoning: [2, 3] },
    ],
  },
  { groupId: 3, turns: [{ prompt: P.c, reasoning: [] }] },
];

/** Σ log p(z | x) of ONE pair, on an unpadded single row: the brute-force reference. */
async function scoreAlone(prompt: readonly number[], z: readonly number[]): Promise<number> {
  const ids = tf.tensor2d([[...prompt, ...z]], [1, prompt.length + z.length], 'int32');
  const { logProbs, entropy } = tokenLogProbs(model, ids);
  const row = (await logProbs.data()) as Float32Array;
  tf.dispose([ids, logProbs, entropy]);
  let s = 0;
  for (let t = 0; t < z.length; t++) s += row[prompt.length - 1 + t];
  return s;
}

const batchedScorer: ContinuationScorer = (pairs) =>
  continuationLogProbSums(model, pairs, { microBatchSize: 3, padId: PAD });

/** Every metric of one sample, written out the long way from a matrix built pair by pair. */
async function bruteForce(
  samples: { prompt: readonly number[]; reasoning: readonly number[]; column: number }[],
  emaPrev?: { mean: number; seq: number },
) {
  const columns = [...new Set(samples.map((s) => s.column))].sort((a, b) => a - b);
  const columnPrompt = columns.map((c) => samples.find((s) => s.column === c)!.prompt);
  const sum: number[][] = [];
  for (const s of samples) {
    const row: number[] = [];
    for (const x of columnPrompt) row.push(await scoreAlone(x, s.reasoning));
    sum.push(row);
  }
  const mean = sum.map((row, i) => row.map((v) => v / samples[i].reasoning.length));
  const own = samples.map((s) => columns.indexOf(s.column));
  const N = columns.length;
  const avg = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const std = (xs: number[]) => Math.sqrt(avg(xs.map((x) => (x - avg(xs)) ** 2)));
  const lse = (xs: number[]) => Math.log(xs.reduce((a, x) => a + Math.exp(x), 0));
  const stats = (m: number[][]) => {
    const matched = m.map((row, i) => row[own[i]]);
    const marginal = m.map((row) => lse(row) - Math.log(N));
    return { matched, marginal, gap: matched.map((v, i) => v - marginal[i]) };
  };
  const tok = stats(mean);
  const seq = stats(sum);
  const sameText = (j: number, k: number) => columnPrompt[j].join() === columnPrompt[k].join();
  const acc = (k: number) =>
    avg(
      mean.map((row, i) => {
        const best = row
          .map((v, j) => [v, j])
          .sort((p, q) => q[0] - p[0] || p[1] - q[1])
          .slice(0, Math.min(k, N, 8))
          .map(([, j]) => j);
        return best.some((j) => sameText(j, own[i])) ? 1 : 0;
      }),
    );
  const chance = avg(own.map((c) => columnPrompt.filter((_, j) => sameText(j, c)).length / N));
  const emaMean = emaPrev ? 0.9 * emaPrev.mean + 0.1 * std(tok.marginal) : std(tok.marginal);
  const emaSeq = emaPrev ? 0.9 * emaPrev.seq + 0.1 * std(seq.marginal) : std(seq.marginal);
  const out: Record<string, number> = {
    mi_estimate: avg(tok.matched) - avg(tok.marginal),
    mi_upper_bound: Math.log(N),
    matched_log_prob_mean: avg(tok.matched),
    marginal_log_prob_mean: avg(tok.marginal),
    mi_seq_estimate: avg(seq.gap),
    retrieval_accuracy: acc(1),
    retrieval_chance_level: chance,
    retrieval_above_chance: acc(1) - chance,
    conditional_entropy_est: -avg(tok.matched),
    reasoning_entropy_est: -avg(tok.marginal),
    conditional_entropy_seq_est: -avg(seq.matched),
    reasoning_entropy_seq_est: -avg(seq.marginal),
    marginal_std: std(tok.marginal),
    marginal_std_seq: std(seq.marginal),
    mi_zscore: avg(tok.gap.map((g) => g / (std(tok.marginal) + 1e-3))),
    mi_zscore_seq: avg(seq.gap.map((g) => g / (std(seq.marginal) + 1e-3))),
    marginal_std_ema: emaMean,
    marginal_std_ema_seq: emaSeq,
    mi_zscore_ema: avg(tok.gap.map((g) => g / (emaMean + 1e-3))),
    mi_zscore_ema_seq: avg(seq.gap.map((g) => g / (emaSeq + 1e-3))),
  };
  for (const k of [2, 4, 8]) {
    out[`retrieval_accuracy@${k}`] = acc(k);
    out[`retrieval_chance_level@${k}`] = Math.min(1, chance * Math.min(k, N, 8));
    out[`retrieval_above_chance@${k}`] = acc(k) - Math.min(1, chance * Math.min(k, N, 8));
  }
  return { metrics: out, ema: { mean: emaMean, seq: emaSeq } };
}

function expectMetricsClose(actual: Record<string, number>, expected: Record<string, number>, prefix: string) {
  for (const [k, v] of Object.entries(expected)) {
    const got = actual[`${prefix}/${k}`];
    expect(got, `${prefix}/${k}`).toBeDefined();
    expect(Math.abs(got - v), `${prefix}/${k}: ${got} vs ${v}`).toBeLessThan(1e-4 * Math.max(1, Math.abs(v)));
  }
  const logged = Object.keys(actual).filter((k) => k.startsWith(`${prefix}/`));
  expect(logged.sort()).toEqual(
    Object.keys(expected)
      .map((k) => `${prefix}/${k}`)
      .sort(),
  );
}

describe('collapse diagnostics against a brute-force computation on a tiny random model', () => {
  it("the batched, padded scorer gives each pair's own teacher-forced log-prob", async () => {
    const pairs = [
      { prompt: P.a, continuation: [20, 21, 22] },
      { prompt: P.a, continuation: [5] },
      { prompt: P.c, continuation: [35, 36, 37, 38, 39, 1] },
      { prompt: P.a, continuation: [23, 24, 25, 26] },
      { prompt: P.b, continuation: [2, 3] },
      { prompt: [5], continuation: [6, 7, 8] }, // a one-token prompt: nothing to cache before the continuation
      { prompt: P.c, continuation: [9] },
    ];
    await continuationLogProbSums(model, pairs, { microBatchSize: 2, padId: PAD }); // may grow the RoPE tables once
    const before = tf.memory().numTensors;
    const progress: [number, number][] = [];
    const sums = await continuationLogProbSums(model, pairs, {
      microBatchSize: 2,
      padId: PAD,
      onProgress: (d, t) => void progress.push([d, t]),
    });
    expect(tf.memory().numTensors).toBe(before);
    expect(progress.map(([d]) => d)).toEqual([1, 2, 3, 4, 5]); // P.a: 3 pairs in 2 micro-batches, P.c: 2 in 1, P.b, [5]
    expect(progress.every(([, t]) => t === 5)).toBe(true);
    for (let i = 0; i < pairs.length; i++) {
      const alone = await scoreAlone(pairs[i].prompt, pairs[i].continuation);
      expect(sums[i]).toBeLessThan(0);
      expect(Math.abs(sums[i] - alone), `pair ${i}`).toBeLessThan(1e-4);
    }
  });

  it('matches every metric of both strategies, and carries the EMA of std(marginal) to the next computation', async () => {
    const rngFor = (prefix: string) => seededUniform(prefix === FIRST_TURN_PREFIX ? 1 : 2);
    const first = await computeCollapseMetrics(TRAJECTORIES, batchedScorer, rngFor, SETTINGS, initialCollapseState());
    expect(first.notes).toEqual([]);

    // The same draws, brute-forced.
    const firstTurnSamples = sampleFirstTurns(TRAJECTORIES, 'all', rngFor(FIRST_TURN_PREFIX));
    const trajectorySamples = sampleTrajectoryUniform(TRAJECTORIES, 'all', rngFor(TRAJECTORY_PREFIX));
    expect(firstTurnSamples.map((s) => s.column)).toEqual([0, 0, 1, 2, 3]); // first turns without thinking are left out
    expect(trajectorySamples.length).toBeGreaterThan(2);
    const bfFirst = await bruteForce(firstTurnSamples);
    const bfTraj = await bruteForce(trajectorySamples);
    expectMetricsClose(first.metrics, bfFirst.metrics, FIRST_TURN_PREFIX);
    expectMetricsClose(first.metrics, bfTraj.metrics, TRAJECTORY_PREFIX);
    // Groups 2 and 3 share their first prompt: a reasoning of group 3 that scores best under group 2's column is
    // still retrieved correctly, and chance is (1/4 + 1/4 + 1/4 + 2/4 + 2/4) / 5 over the 4 columns.
    expect(first.metrics[`${FIRST_TURN_PREFIX}/retrieval_chance_level`]).toBeCloseTo(0.35, 12);
    expect(first.metrics[`${FIRST_TURN_PREFIX}/mi_upper_bound`]).toBeCloseTo(Math.log(4), 12);

    // Valid thinking: 9 of 12 turns; first turns 5 of 7.
    expect(first.metrics['collapse/valid_thinking_rate']).toBeCloseTo(9 / 12, 12);
    expect(first.metrics['collapse/first_turn_num_total']).toBe(7);
    expect(first.metrics['collapse/first_turn_num_valid']).toBe(5);
    expect(first.metrics['collapse/first_turn_valid_rate']).toBeCloseTo(5 / 7, 12);
    for (const k of ['timing_s/collapse_first_turn_step', 'timing_s/collapse_multi_turn_step'])
      expect(first.metrics[k]).toBeGreaterThanOrEqual(0);
    // Every key is documented with the metric keys (src/metrics/keys.ts).
    const documented = new Set(OPTIONAL_FIXED_KEYS.map((d) => d.key));
    for (const k of Object.keys(first.metrics)) expect(documented.has(k), k).toBe(true);

    // The EMA: a second computation (other draws) folds its std into the first one's.
    expect(first.state.emaMarginalStd[FIRST_TURN_PREFIX]).toBeCloseTo(bfFirst.ema.mean, 5);
    const rngFor2 = (prefix: string) => seededUniform(prefix === FIRST_TURN_PREFIX ? 3 : 4);
    const second = await computeCollapseMetrics(
      TRAJECTORIES,
      batchedScorer,
      rngFor2,
      { ...SETTINGS, numSamples: 4 },
      first.state,
    );
    const bfSecond = await bruteForce(sampleFirstTurns(TRAJECTORIES, 4, rngFor2(FIRST_TURN_PREFIX)), bfFirst.ema);
    expectMetricsClose(second.metrics, bfSecond.metrics, FIRST_TURN_PREFIX);
    expect(second.metrics[`${FIRST_TURN_PREFIX}/marginal_std_ema`]).not.toBeCloseTo(
      second.metrics[`${FIRST_TURN_PREFIX}/marginal_std`],
      6,
    );
    expect(first.state.emaMarginalStd[FIRST_TURN_PREFIX]).toBeCloseTo(bfFirst.ema.mean, 5); // the input state is not modified
  });

  it('scores each distinct (prompt, reasoning) pair once', async () => {
    const seen: number[] = [];
    const counting: ContinuationScorer = async (pairs) => {
      seen.push(pairs.length);
      return batchedScorer(pairs);
    };
    // Trajectory samples: 3 draws of the same turn = 3 columns with one prompt and one reasoning -> 1 pair.
    const same = [{ groupId: 0, turns: [{ prompt: P.a, reasoning: [20, 21] }] }];
    const m = await crossScore(sampleTrajectoryUniform([...same, ...same, ...same], 'all', seededUniform(5)), counting);
    expect(seen).toEqual([1]);
    expect(m.sum.length).toBe(3);
    expect(m.sum.every((row) => row.length === 3 && row.every((v) => v === row[0]))).toBe(true);
  });
});

describe('collapse diagnostics: the sampling rules', () => {
  it('first-turn samples: only first turns with valid thinking, numSamples of them without replacement', () => {
    const rng = seededUniform(9);
    for (let trial = 0; trial < 20; trial++) {
      const s = sampleFirstTurns(TRAJECTORIES, 3, rng);
      expect(s.length).toBe(3);
      // Distinct trajectories: the (prompt, reasoning) of the 5 valid first turns are pairwise different.
      expect(new Set(s.map((x) => `${x.prompt.join()}|${x.reasoning.join()}`)).size).toBe(3);
      for (const x of s) expect(x.reasoning.length).toBeGreaterThan(0);
    }
    expect(sampleFirstTurns(TRAJECTORIES, 64, rng).length).toBe(5);
  });

  it('trajectory-uniform samples: a trajectory, then one of its valid turns, each uniformly (not turn-uniform)', () => {
    // One trajectory with 1 valid turn, one with 4: trajectory-uniform picks the short one half the time; a
    // turn-uniform draw would pick it 1/5 of the time. A trajectory without valid thinking loses its draws.
    const short = { groupId: 0, turns: [{ prompt: [1], reasoning: [9] }] };
    const long = { groupId: 1, turns: [1, 2, 3, 4].map((t) => ({ prompt: [2, t], reasoning: [10 + t] })) };
    const silent = {
      groupId: 2,
      turns: [
        { prompt: [3], reasoning: [] },
        { prompt: [3, 1], reasoning: [] },
      ],
    };
    const rng = seededUniform(4);
    let shortHits = 0;
    let draws = 0;
    let samples = 0;
    const perTurn = new Map<number, number>();
    for (let trial = 0; trial < 2000; trial++) {
      const s = sampleTrajectoryUniform([short, long, silent], 'all', rng);
      draws += 5; // 'all' = as many draws as valid turns
      samples += s.length;
      shortHits += s.filter((x) => x.prompt[0] === 1).length;
      for (const x of s) if (x.prompt[0] === 2) perTurn.set(x.prompt[1], (perTurn.get(x.prompt[1]) ?? 0) + 1);
      expect(s.map((x) => x.column)).toEqual(s.map((_, i) => i)); // every sample its own column
    }
    expect(samples / draws).toBeGreaterThan(0.63); // about 2/3 of the draws land on a trajectory with thinking
    expect(samples / draws).toBeLessThan(0.7);
    expect(shortHits / samples).toBeGreaterThan(0.47);
    expect(shortHits / samples).toBeLessThan(0.53);
    for (const t of [1, 2, 3, 4]) expect(perTurn.get(t)! / (samples - shortHits)).toBeCloseTo(0.25, 1);
    expect(sampleTrajectoryUniform([short, long], 2, rng).length).toBe(2);
  });

  it('the same random stream gives the same samples', () => {
    const a = sampleTrajectoryUniform(TRAJECTORIES, 6, seededUniform(7));
    const b = sampleTrajectoryUniform(TRAJECTORIES, 6, seededUniform(7));
    expect(a).toEqual(b);
    expect(sampleFirstTurns(TRAJECTORIES, 2, seededUniform(7))).toEqual(
      sampleFirstTurns(TRAJECTORIES, 2, seededUniform(7)),
    );
  });

  it('identical prompts count as a correct retrieval (a hand-made matrix)', async () => {
    // Columns 0 and 1 hold the same prompt, column 2 another. Sample 0 (column 0) scores best under column 1: correct.
    // Sample 1 (column 1) scores best under column 2: wrong at @1, right at @2. Sample 2 (column 2) scores best under
    // both copies of the other prompt: wrong at @1 and @2, right at @4.
    const scores: Record<string, number> = { '1|7': -1, '1|8': -5, '2|7': -4, '2|8': -2, '2|9': -3, '1|9': -1 };
    const scorer: ContinuationScorer = async (pairs) => pairs.map((p) => scores[`${p.prompt[0]}|${p.continuation[0]}`]);
    const samples = [
      { prompt: [1], reasoning: [7], column: 0 },
      { prompt: [1], reasoning: [8], column: 1 },
      { prompt: [2], reasoning: [9], column: 2 },
    ];
    const rngFor = () => seededUniform(1);
    const trajectories: CollapseTrajectory[] = samples.map((s) => ({
      groupId: s.column,
      turns: [{ prompt: s.prompt, reasoning: s.reasoning }],
    }));
    const r = await computeCollapseMetrics(
      trajectories,
      scorer,
      rngFor,
      { ...SETTINGS, trajectory: false },
      initialCollapseState(),
    );
    const m = (k: string) => r.metrics[`${FIRST_TURN_PREFIX}/${k}`];
    expect(m('retrieval_accuracy')).toBeCloseTo(1 / 3, 12);
    expect(m('retrieval_accuracy@2')).toBeCloseTo(2 / 3, 12);
    expect(m('retrieval_accuracy@4')).toBe(1);
    expect(m('retrieval_chance_level')).toBeCloseTo((2 / 3 + 2 / 3 + 1 / 3) / 3, 12);
    expect(m('retrieval_chance_level@2')).toBeCloseTo(Math.min(1, (2 * 5) / 9), 12);
    expect(m('retrieval_accuracy@8')).toBe(1);
    expect(Object.keys(r.metrics).some((k) => k.startsWith(TRAJECTORY_PREFIX))).toBe(false);
  });

  it('needs two prompts: a sample with one column logs nothing and says why', async () => {
    const one: CollapseTrajectory[] = [0, 1].map(() => ({ groupId: 5, turns: [{ prompt: [1, 2], reasoning: [3] }] }));
    const r = await computeCollapseMetrics(
      one,
      batchedScorer,
      () => seededUniform(1),
      { ...SETTINGS, trajectory: false },
      initialCollapseState(),
    );
    expect(Object.keys(r.metrics).filter((k) => k.startsWith(FIRST_TURN_PREFIX))).toEqual([]);
    expect(r.notes).toEqual([`${FIRST_TURN_PREFIX}: 1 prompt(s) with valid thinking, at least 2 are needed`]);
    expect(r.state).toEqual(initialCollapseState());
    expect(r.metrics['collapse/first_turn_valid_rate']).toBe(1);
  });

  it('a group whose first prompts differ is skipped with a note, as RAGEN-2 refuses it', async () => {
    const bad: CollapseTrajectory[] = [
      { groupId: 0, turns: [{ prompt: [1], reasoning: [3] }] },
      { groupId: 0, turns: [{ prompt: [2], reasoning: [3] }] },
      { groupId: 1, turns: [{ prompt: [4], reasoning: [3] }] },
    ];
    const r = await computeCollapseMetrics(
      bad,
      batchedScorer,
      () => seededUniform(1),
      { ...SETTINGS, trajectory: false },
      initialCollapseState(),
    );
    expect(r.notes[0]).toMatch(/column 0 have different prompts/);
  });
});

describe('collapse diagnostics: schedule and text', () => {
  it('computes on step 1 and every computeFreq-th step', () => {
    expect([0, 1, 2, 4, 5, 6, 10, 15].filter((s) => shouldComputeCollapse(s, 5))).toEqual([1, 5, 10, 15]);
    expect([1, 2, 3].filter((s) => shouldComputeCollapse(s, 1))).toEqual([1, 2, 3]);
  });

  it('extracts the reasoning as RAGEN-2 does: the first think block, special tokens removed, trimmed', () => {
    expect(reasoningText('<think> go left </think><answer>Left</answer>')).toBe('go left');
    expect(reasoningText('<think>box <|im_end|>at 2</think> junk')).toBe('box at 2'); // malformed answer: still reasoning
    expect(reasoningText('<think>never closed')).toBe('');
    expect(reasoningText('<answer>Left</answer>')).toBe('');
    expect(reasoningText('<think>  </think><answer>x</answer>')).toBe('');
  });

  it('tokenizes prompts and reasonings of agent trajectories', () => {
    const encode = (text: string) => [...text].map((c) => c.charCodeAt(0));
    const t = collapseTrajectories(
      [
        {
          groupId: 4,
          turns: [
            { prompt: 'ab<think>', response: '<think>xy</think><answer>L</answer>' },
            { prompt: 'c', response: 'oops' },
          ],
        },
      ],
      encode,
    );
    expect(t).toEqual([
      {
        groupId: 4,
        turns: [
          { prompt: encode('ab<think>'), reasoning: encode('xy') },
          { prompt: encode('c'), reasoning: [] },
        ],
      },
    ]);
  });
});
