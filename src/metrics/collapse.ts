// RAGEN-2's collapse diagnostics (spec §4.7; mll-lab-nu/RAGEN ragen/trainer/collapse_metrics.py): does the policy's
// reasoning still depend on its input?
//
// RAGEN-2 separates two ways reasoning can die. Entropy collapse: the reasoning becomes deterministic for each input
// (low H(Z|X)). Template collapse: it stays varied but stops depending on the input (low mutual information I(X;Z)),
// the same few templates whatever the state. Both are measured on sampled (x, z) pairs of one training step:
//   x = the turn's generation prompt, up to and including the forced `<think>`;
//   z = the reasoning tokens strictly between `<think>` and `</think>` of the response (special tokens removed,
//       trimmed, tokenized on their own as RAGEN does). A turn whose z is empty has no valid thinking: it is never
//       sampled, and it is counted in `collapse/valid_thinking_rate` / `collapse/first_turn_valid_rate`.
//
// The cross-scored matrix: the columns are the sample's prompts x_1..x_N (one per env group for first-turn samples,
// one per sample for trajectory samples), and every sampled z_i is teacher-forced under every x_j:
//   sum_ij  = Σ_t log p(z_i,t | x_j, z_i,<t)           (per-sequence sum, the `_seq` metrics)
//   mean_ij = sum_ij / |z_i|                            (per-token mean, the plain metrics)
// For each sample i with its own column c(i), on either matrix ℓ:
//   matched_i  = ℓ_i,c(i)
//   marginal_i = logsumexp_j ℓ_ij − log N               (z_i's log-prob under the uniform mixture of the prompts)
//   H(Z|X) ≈ −mean(matched)    H(Z) ≈ −mean(marginal)    MI ≈ mean(matched − marginal), at most log N
//   retrieval accuracy = fraction of samples whose best column (argmax_j mean_ij) holds their own prompt; columns
//                        whose prompts are identical token for token count as the same prompt, so the chance level
//                        is the mean over samples of (#columns with the own prompt) / N; @k looks at the k best
//                        columns (ties broken by the lower column index), chance@k = min(1, k·chance)
//   MI z-score = mean((matched − marginal) / (std(marginal) + stdEps)), std over samples without Bessel's
//                correction; its EMA variant divides by an exponential moving average of std(marginal) instead
//                (decay emaDecay, started at the first value, one per sample strategy and per matrix).
// Two sample strategies, each under its own RAGEN-2 metric prefix:
//   collapse_first_turn_sample/  the first turn of each trajectory with valid thinking, `numSamples` of them drawn
//                                without replacement (all when there are fewer); columns = env groups;
//   collapse_trajectory_sample/  `min(numSamples, valid turns)` draws, each picking a trajectory uniformly and then one
//                                of its valid turns uniformly (a draw that hits a trajectory without valid thinking is
//                                lost, as in RAGEN-2); every draw is its own column.
// A strategy with fewer than two columns logs nothing (RAGEN-2's rule: MI needs two prompts).
//
// This file is pure: it samples with the random source it is given and scores through a ContinuationScorer (the
// Trainer's batches the teacher forcing on the model: src/starpo/collapseScoring.ts). Its only state, the EMAs of
// std(marginal), is plain JSON that the Trainer checkpoints.

/** The metric prefixes of the two sample strategies (RAGEN-2's names). */
export const FIRST_TURN_PREFIX = 'collapse_first_turn_sample';
export const TRAJECTORY_PREFIX = 'collapse_trajectory_sample';
export type CollapsePrefix = typeof FIRST_TURN_PREFIX | typeof TRAJECTORY_PREFIX;

/** One turn as the diagnostics see it: token ids of x and z; `reasoning` is empty when the turn had no valid thinking. */
export interface CollapseTurn {
  prompt: readonly number[];
  reasoning: readonly number[];
}

/** One trajectory: its env group (trajectories of a group share their first prompt) and its turns in order. */
export interface CollapseTrajectory {
  groupId: number;
  turns: readonly CollapseTurn[];
}

/** A sampled (x, z) pair and the column it belongs to (its env group, or its own index for trajectory samples). */
export interface CollapseSample {
  prompt: readonly number[];
  reasoning: readonly number[];
  column: number;
}

/**
 * Σ_t log p(continuation_t | prompt, continuation_<t) for each pair, by teacher forcing, in the order given. The
 * diagnostics call it once per strategy with every distinct (prompt, continuation) pair they need.
 */
export type ContinuationScorer = (
  pairs: readonly { prompt: readonly number[]; continuation: readonly number[] }[],
) => Promise<ArrayLike<number>>;

/** The settings of the diagnostics: the run's `collapse` section (src/starpo/config/schema.ts documents each field). */
export interface CollapseSettings {
  computeFreq: number;
  numSamples: number | 'all';
  firstTurn: boolean;
  trajectory: boolean;
  stdEps: number;
  emaDecay: number;
}

/** The EMAs of std(marginal) per strategy prefix: per-token (`mean`) and per-sequence (`seq`). Plain JSON. */
export interface CollapseState {
  emaMarginalStd: Record<string, number>;
  emaMarginalStdSeq: Record<string, number>;
}

export function initialCollapseState(): CollapseState {
  return { emaMarginalStd: {}, emaMarginalStdSeq: {} };
}

/** RAGEN-2's schedule: step 1, then every computeFreq-th step. */
export function shouldComputeCollapse(step: number, computeFreq: number): boolean {
  if (step < 1) return false;
  return step === 1 || step % computeFreq === 0;
}

/** The tokens RAGEN's context manager deletes from the reasoning before tokenizing it. */
const SPECIAL_TOKENS = ['<think>', '</think>', '<answer>', '</answer>', '<|im_start|>', '<|im_end|>'];

/**
 * The reasoning text of a stored response (the trained-on text, `<think>` included), as RAGEN-2 extracts it: the
 * first `<think>(.*?)</think>` match, special tokens removed, trimmed; '' when there is no complete think block.
 * A response whose answer part is malformed still has reasoning when its think block is complete.
 */
export function reasoningText(response: string): string {
  const open = response.indexOf('<think>');
  if (open < 0) return '';
  const start = open + '<think>'.length;
  const close = response.indexOf('</think>', start);
  if (close < 0) return '';
  let text = response.slice(start, close);
  for (const token of SPECIAL_TOKENS) text = text.split(token).join('');
  return text.trim();
}

/** The parts of src/agent's `Trajectory` / `TurnRecord` the diagnostics read (structural type). */
export interface TrajectoryText {
  groupId: number;
  /** Each turn's generation prompt (ending in the forced `<think>`) and its stored response (`<think>` included). */
  turns: readonly { prompt: string; response: string }[];
}

/**
 * Trajectories as token ids: x = the whole generation prompt, z = reasoningText(response) tokenized on its own
 * ([] when there is none). `encode` is the policy tokenizer's; identical texts are encoded once.
 */
export function collapseTrajectories(
  trajectories: readonly TrajectoryText[],
  encode: (text: string) => number[],
): CollapseTrajectory[] {
  const cache = new Map<string, number[]>();
  const tokens = (text: string) => {
    let ids = cache.get(text);
    if (!ids) cache.set(text, (ids = text === '' ? [] : encode(text)));
    return ids;
  };
  return trajectories.map((t) => ({
    groupId: t.groupId,
    turns: t.turns.map((turn) => ({ prompt: tokens(turn.prompt), reasoning: tokens(reasoningText(turn.response)) })),
  }));
}

/** A uniform draw in [0, 1). */
export type RandomSource = () => number;

function randomIndex(rng: RandomSource, n: number): number {
  return Math.min(n - 1, Math.floor(rng() * n));
}

/**
 * First-turn samples: every trajectory whose first turn has valid thinking, or `numSamples` of them drawn without
 * replacement when there are more. The column of a sample is its env group.
 */
export function sampleFirstTurns(
  trajectories: readonly CollapseTrajectory[],
  numSamples: number | 'all',
  rng: RandomSource,
): CollapseSample[] {
  const valid = trajectories.filter((t) => t.turns.length > 0 && t.turns[0].reasoning.length > 0);
  let picked = valid;
  if (numSamples !== 'all' && numSamples < valid.length) {
    // A partial Fisher-Yates shuffle: the first numSamples entries are a uniform draw without replacement.
    const pool = [...valid];
    for (let i = 0; i < numSamples; i++) {
      const j = i + randomIndex(rng, pool.length - i);
      [pool[i], pool[j]] = [pool[j], pool[i]];
    }
    picked = pool.slice(0, numSamples);
  }
  return picked.map((t) => ({ prompt: t.turns[0].prompt, reasoning: t.turns[0].reasoning, column: t.groupId }));
}

/**
 * Trajectory-uniform samples: min(numSamples, valid turns) draws with replacement, each a trajectory chosen uniformly
 * and then one of its valid turns uniformly, so long and short trajectories weigh the same. A draw that lands on a
 * trajectory without valid thinking yields nothing (RAGEN-2 does the same). Every sample is its own column.
 */
export function sampleTrajectoryUniform(
  trajectories: readonly CollapseTrajectory[],
  numSamples: number | 'all',
  rng: RandomSource,
): CollapseSample[] {
  const validTurns = trajectories.map((t) => t.turns.filter((turn) => turn.reasoning.length > 0));
  const total = validTurns.reduce((s, v) => s + v.length, 0);
  const draws = numSamples === 'all' ? total : Math.min(numSamples, total);
  const out: CollapseSample[] = [];
  for (let d = 0; d < draws; d++) {
    const turns = validTurns[randomIndex(rng, validTurns.length)];
    if (turns.length === 0) continue;
    const turn = turns[randomIndex(rng, turns.length)];
    out.push({ prompt: turn.prompt, reasoning: turn.reasoning, column: out.length });
  }
  return out;
}

/** The cross-scored matrices of one sample: row i = sample i, column j = prompt j. */
export interface CrossMatrix {
  /** Per-sequence sums Σ_t log p(z_i,t | x_j, z_i,<t). */
  sum: Float64Array[];
  /** Per-token means: sum / |z_i|. */
  mean: Float64Array[];
  /** The column of each sample's own prompt. */
  own: number[];
  /** Each column's prompt, as its token ids joined (identical prompts have identical signatures). */
  signatures: string[];
}

const signatureOf = (ids: readonly number[]) => ids.join(',');

/**
 * Teacher-forces every sampled reasoning under every column's prompt. Columns are the distinct `column` values in
 * ascending order, each represented by the prompt of its first sample; a column whose samples disagree on the prompt
 * is an error (RAGEN-2 raises the same). Identical (prompt, reasoning) pairs are scored once.
 */
export async function crossScore(samples: readonly CollapseSample[], scorer: ContinuationScorer): Promise<CrossMatrix> {
  const columnIds = [...new Set(samples.map((s) => s.column))].sort((a, b) => a - b);
  const columnIndex = new Map(columnIds.map((c, j) => [c, j]));
  const prompts: (readonly number[])[] = new Array(columnIds.length);
  for (const s of samples) {
    const j = columnIndex.get(s.column)!;
    if (prompts[j] === undefined) prompts[j] = s.prompt;
    else if (signatureOf(prompts[j]) !== signatureOf(s.prompt)) {
      throw new Error(
        `collapse diagnostics: the samples of column ${s.column} have different prompts (a group's first turns should share one)`,
      );
    }
  }
  const signatures = prompts.map(signatureOf);

  // Distinct pairs: identical prompts and identical reasonings give identical log-probs.
  const pairs: { prompt: readonly number[]; continuation: readonly number[] }[] = [];
  const pairIndex = new Map<string, number>();
  const cell = samples.map((s) =>
    prompts.map((prompt, j) => {
      const key = `${signatures[j]}|${signatureOf(s.reasoning)}`;
      let k = pairIndex.get(key);
      if (k === undefined) {
        k = pairs.length;
        pairIndex.set(key, k);
        pairs.push({ prompt, continuation: s.reasoning });
      }
      return k;
    }),
  );
  const scores = pairs.length > 0 ? await scorer(pairs) : [];
  if (scores.length !== pairs.length)
    throw new Error(`collapse diagnostics: the scorer returned ${scores.length} scores for ${pairs.length} pairs`);
  const sum = cell.map((row) => Float64Array.from(row, (k) => scores[k]));
  const mean = sum.map((row, i) => row.map((v) => v / samples[i].reasoning.length));
  return { sum, mean, own: samples.map((s) => columnIndex.get(s.column)!), signatures };
}

function average(xs: ArrayLike<number>): number {
  let s = 0;
  for (let i = 0; i < xs.length; i++) s += xs[i];
  return s / xs.length;
}

/** Standard deviation without Bessel's correction (torch's unbiased=False). */
function populationStd(xs: ArrayLike<number>): number {
  const m = average(xs);
  let s = 0;
  for (let i = 0; i < xs.length; i++) s += (xs[i] - m) ** 2;
  return Math.sqrt(s / xs.length);
}

function logSumExp(row: ArrayLike<number>): number {
  let max = -Infinity;
  for (let i = 0; i < row.length; i++) if (row[i] > max) max = row[i];
  if (max === -Infinity) return -Infinity;
  let s = 0;
  for (let i = 0; i < row.length; i++) s += Math.exp(row[i] - max);
  return max + Math.log(s);
}

/** matched_i = ℓ_i,own(i) and marginal_i = logsumexp_j ℓ_ij − log N. */
function matchedAndMarginal(
  matrix: readonly Float64Array[],
  own: readonly number[],
): { matched: Float64Array; marginal: Float64Array } {
  const n = matrix[0].length;
  return {
    matched: Float64Array.from(matrix, (row, i) => row[own[i]]),
    marginal: Float64Array.from(matrix, (row) => logSumExp(row) - Math.log(n)),
  };
}

/** Column indices ordered by score, best first; ties go to the lower index. */
function ranking(row: Float64Array): number[] {
  return Array.from(row.keys()).sort((a, b) => row[b] - row[a] || a - b);
}

function retrievalMetrics(m: CrossMatrix): Record<string, number> {
  const n = m.signatures.length;
  const sigIds = new Map<string, number>();
  const columnSig = m.signatures.map((s) => {
    if (!sigIds.has(s)) sigIds.set(s, sigIds.size);
    return sigIds.get(s)!;
  });
  const counts = new Map<number, number>();
  for (const id of columnSig) counts.set(id, (counts.get(id) ?? 0) + 1);
  const kMax = Math.min(8, n);
  const chance = average(m.own.map((c) => counts.get(columnSig[c])! / n));
  const hits = { 1: 0, 2: 0, 4: 0, 8: 0 } as Record<number, number>;
  m.mean.forEach((row, i) => {
    const truth = columnSig[m.own[i]];
    const order = ranking(row);
    for (const k of [1, 2, 4, 8]) {
      if (order.slice(0, Math.min(k, kMax)).some((j) => columnSig[j] === truth)) hits[k] += 1;
    }
  });
  const samples = m.own.length;
  const out: Record<string, number> = {};
  for (const k of [2, 4, 8]) {
    const accuracy = hits[k] / samples;
    const chanceK = Math.min(1, chance * Math.min(k, kMax));
    out[`retrieval_accuracy@${k}`] = accuracy;
    out[`retrieval_chance_level@${k}`] = chanceK;
    out[`retrieval_above_chance@${k}`] = accuracy - chanceK;
  }
  out.retrieval_accuracy = hits[1] / samples;
  out.retrieval_chance_level = chance;
  out.retrieval_above_chance = hits[1] / samples - chance;
  return out;
}

/** The EMA of std(marginal) after folding in `current` (the first value starts it). */
function nextEma(previous: number | undefined, current: number, decay: number): number {
  return previous === undefined ? current : decay * previous + (1 - decay) * current;
}

/**
 * Every metric of one cross-scored sample, under RAGEN-2's names without the prefix (`mi_estimate`,
 * `retrieval_accuracy@4`, `mi_zscore_ema_seq`, ...), and the EMAs of std(marginal) after this sample.
 */
export function collapseStats(
  m: CrossMatrix,
  previousEma: { mean?: number; seq?: number },
  settings: Pick<CollapseSettings, 'stdEps' | 'emaDecay'>,
): { metrics: Record<string, number>; ema: { mean: number; seq: number } } {
  const n = m.signatures.length;
  const tok = matchedAndMarginal(m.mean, m.own);
  const seq = matchedAndMarginal(m.sum, m.own);
  const gap = (x: { matched: Float64Array; marginal: Float64Array }) => x.matched.map((v, i) => v - x.marginal[i]);
  const tokGap = gap(tok);
  const seqGap = gap(seq);
  const matchedMean = average(tok.matched);
  const marginalMean = average(tok.marginal);
  const std = populationStd(tok.marginal);
  const stdSeq = populationStd(seq.marginal);
  const ema = {
    mean: nextEma(previousEma.mean, std, settings.emaDecay),
    seq: nextEma(previousEma.seq, stdSeq, settings.emaDecay),
  };
  const zscore = (g: Float64Array, denominator: number) => average(g.map((v) => v / (denominator + settings.stdEps)));
  const metrics: Record<string, number> = {
    mi_estimate: matchedMean - marginalMean,
    mi_upper_bound: Math.log(n),
    matched_log_prob_mean: matchedMean,
    marginal_log_prob_mean: marginalMean,
    mi_seq_estimate: average(seqGap),
    ...retrievalMetrics(m),
    conditional_entropy_est: -matchedMean,
    reasoning_entropy_est: -marginalMean,
    conditional_entropy_seq_est: -average(seq.matched),
    reasoning_entropy_seq_est: -average(seq.marginal),
    marginal_std: std,
    marginal_std_seq: stdSeq,
    mi_zscore: zscore(tokGap, std),
    mi_zscore_seq: zscore(seqGap, stdSeq),
    marginal_std_ema: ema.mean,
    marginal_std_ema_seq: ema.seq,
    mi_zscore_ema: zscore(tokGap, ema.mean),
    mi_zscore_ema_seq: zscore(seqGap, ema.seq),
  };
  return { metrics, ema };
}

/** What one computation gives: the metrics of the step, the state to keep, and why a strategy logged nothing. */
export interface CollapseResult {
  metrics: Record<string, number>;
  state: CollapseState;
  notes: string[];
}

/**
 * The diagnostics of one training step: valid-thinking rates, then each enabled strategy (sampled with
 * `rngFor(prefix)`, its own random stream so that turning one strategy off leaves the other's draws alone;
 * cross-scored through `scorer`, summarised under its prefix), with their timings (`timing_s/collapse_first_turn_step`,
 * `timing_s/collapse_multi_turn_step`, RAGEN-2's names). `state` is not modified: the result carries the next one.
 */
export async function computeCollapseMetrics(
  trajectories: readonly CollapseTrajectory[],
  scorer: ContinuationScorer,
  rngFor: (prefix: CollapsePrefix) => RandomSource,
  settings: CollapseSettings,
  state: CollapseState,
  clock: () => number = () => performance.now() / 1000,
): Promise<CollapseResult> {
  const metrics: Record<string, number> = {};
  const notes: string[] = [];
  const next: CollapseState = {
    emaMarginalStd: { ...state.emaMarginalStd },
    emaMarginalStdSeq: { ...state.emaMarginalStdSeq },
  };

  const strategy = async (prefix: CollapsePrefix, samples: CollapseSample[]) => {
    const columns = new Set(samples.map((s) => s.column)).size;
    if (columns < 2) {
      notes.push(`${prefix}: ${columns} prompt(s) with valid thinking, at least 2 are needed`);
      return;
    }
    let matrix: CrossMatrix;
    try {
      matrix = await crossScore(samples, scorer);
    } catch (err) {
      if (!(err instanceof Error) || !err.message.startsWith('collapse diagnostics:')) throw err;
      notes.push(`${prefix}: ${err.message}`);
      return;
    }
    const { metrics: m, ema } = collapseStats(
      matrix,
      { mean: state.emaMarginalStd[prefix], seq: state.emaMarginalStdSeq[prefix] },
      settings,
    );
    for (const [k, v] of Object.entries(m)) metrics[`${prefix}/${k}`] = v;
    next.emaMarginalStd[prefix] = ema.mean;
    next.emaMarginalStdSeq[prefix] = ema.seq;
  };

  // RAGEN-2's order: the trajectory-uniform strategy, then the first turns.
  if (settings.trajectory) {
    const t0 = clock();
    const turns = trajectories.reduce((s, t) => s + t.turns.length, 0);
    const valid = trajectories.reduce((s, t) => s + t.turns.filter((x) => x.reasoning.length > 0).length, 0);
    if (turns > 0) metrics['collapse/valid_thinking_rate'] = valid / turns;
    await strategy(
      TRAJECTORY_PREFIX,
      sampleTrajectoryUniform(trajectories, settings.numSamples, rngFor(TRAJECTORY_PREFIX)),
    );
    metrics['timing_s/collapse_multi_turn_step'] = clock() - t0;
  }
  if (settings.firstTurn) {
    const t0 = clock();
    const valid = trajectories.filter((t) => t.turns.length > 0 && t.turns[0].reasoning.length > 0).length;
    metrics['collapse/first_turn_num_total'] = trajectories.length;
    metrics['collapse/first_turn_num_valid'] = valid;
    metrics['collapse/first_turn_valid_rate'] = trajectories.length > 0 ? valid / trajectories.length : 0;
    await strategy(FIRST_TURN_PREFIX, sampleFirstTurns(trajectories, settings.numSamples, rngFor(FIRST_TURN_PREFIX)));
    metrics['timing_s/collapse_first_turn_step'] = clock() - t0;
  }
  return { metrics, state: next, notes };
}

/** Throws when `state` is not a CollapseState (e.g. a hand-edited checkpoint). */
export function checkCollapseState(state: unknown): CollapseState {
  const isNumberMap = (v: unknown) =>
    typeof v === 'object' &&
    v !== null &&
    !Array.isArray(v) &&
    Object.values(v).every((x) => typeof x === 'number' && Number.isFinite(x));
  const s = state as CollapseState;
  if (
    typeof state !== 'object' ||
    state === null ||
    !isNumberMap(s.emaMarginalStd) ||
    !isNumberMap(s.emaMarginalStdSeq)
  ) {
    throw new Error(
      'collapse diagnostics: the saved state must hold emaMarginalStd and emaMarginalStdSeq maps of finite numbers',
    );
  }
  return { emaMarginalStd: { ...s.emaMarginalStd }, emaMarginalStdSeq: { ...s.emaMarginalStdSeq } };
}
