// Reasoning length and reasoning diversity of the <think> texts of one training step.
//
// Why: the paper (Fig. 11) shows reasoning shrinking over training, and the "echo trap" / RAGEN-2's "template
// collapse" is a policy that emits the same reasoning whatever the input. RAGEN-2 measures input dependence with
// a cross-scored mutual-information estimate that needs extra forward passes (spec §4.7); the measures here are
// cheap text statistics that reach the same verdict on the extreme case: an echoed batch scores ~0 diversity and
// ~1 cross-state sharing, a varied batch scores high diversity and ~0 sharing.

/** Counts "tokens" in a text. Pass the model tokenizer's count to log model tokens; the default counts words. */
export type TokenCounter = (text: string) => number;

/** Whitespace-separated words: the default reasoning-length unit when no tokenizer is at hand. */
export function countWords(text: string): number {
  const trimmed = text.trim();
  return trimmed === '' ? 0 : trimmed.split(/\s+/).length;
}

const THINK_RE = /<think>([\s\S]*?)<\/think>/;

/**
 * The reasoning of one response: the trimmed text strictly between the first `<think>` and the next `</think>`,
 * or null when the response has no complete think block (a format failure). Generation forces a leading
 * `<think>` that the sampled text does not contain: prepend it before calling, as RAGEN does when parsing.
 */
export function extractThink(response: string): string | null {
  const m = THINK_RE.exec(response);
  return m ? m[1].trim() : null;
}

/** Lower-cased words and single punctuation marks: "Push the box, then Up." -> push the box , then up . */
export function diversityTokens(text: string): string[] {
  return text.toLowerCase().match(/[\p{L}\p{N}_]+|[^\s\p{L}\p{N}_]/gu) ?? [];
}

// A separator that cannot occur inside a token, so joined n-grams never collide.
const GRAM_SEP = '\u0001';

function ngrams(tokens: readonly string[], n: number): string[] {
  const out: string[] = [];
  for (let i = 0; i + n <= tokens.length; i++) out.push(tokens.slice(i, i + n).join(GRAM_SEP));
  return out;
}

function checkN(n: number): void {
  if (!Number.isInteger(n) || n < 1) throw new Error(`n-gram order must be a positive integer, got ${n}`);
}

/**
 * distinct-n (Li et al., 2016): distinct n-grams / all n-grams, pooled over the batch. 1 when no n-gram
 * repeats; an echoed batch of N copies scores at most 1/N. NaN when the batch has no n-gram at all.
 */
export function distinctN(texts: readonly string[], n: number): number {
  checkN(n);
  const seen = new Set<string>();
  let total = 0;
  for (const text of texts) {
    for (const g of ngrams(diversityTokens(text), n)) {
      seen.add(g);
      total += 1;
    }
  }
  return total === 0 ? NaN : seen.size / total;
}

/** Whitespace-normalised text, so "a  b" and "a b\n" count as the same reasoning. */
function normalise(text: string): string {
  return text.trim().replace(/\s+/g, ' ');
}

/** Distinct think strings / think strings (after whitespace normalisation). Echo -> 1/N; all different -> 1. */
export function uniqueFraction(texts: readonly string[]): number {
  if (texts.length === 0) return NaN;
  return new Set(texts.map(normalise)).size / texts.length;
}

function gramSet(text: string, n: number): Set<string> {
  const tokens = diversityTokens(text);
  // A text shorter than n still has content: treat the whole text as its one gram.
  if (tokens.length < n) return new Set(tokens.length === 0 ? [] : [tokens.join(GRAM_SEP)]);
  return new Set(ngrams(tokens, n));
}

function jaccard(a: Set<string>, b: Set<string>): number {
  if (a.size === 0 && b.size === 0) return 1; // two empty reasonings are the same reasoning
  let common = 0;
  for (const g of a) if (b.has(g)) common += 1;
  return common / (a.size + b.size - common);
}

/**
 * 1 − mean Jaccard similarity of the n-gram sets over all pairs of texts (a self-BLEU-like measure that is
 * cheap and order-free). 0 for an echoed batch, near 1 when texts share few n-grams. O(N²) pairs: fine for a
 * step's few hundred turns. NaN for fewer than two texts.
 */
export function pairwiseDiversity(texts: readonly string[], n = 2): number {
  checkN(n);
  if (texts.length < 2) return NaN;
  const sets = texts.map((t) => gramSet(t, n));
  let similarity = 0;
  let pairs = 0;
  for (let i = 0; i < sets.length; i++) {
    for (let j = i + 1; j < sets.length; j++) {
      similarity += jaccard(sets[i], sets[j]);
      pairs += 1;
    }
  }
  return 1 - similarity / pairs;
}

/** One think text together with the input it should depend on. */
export interface ReasoningSample {
  /** The text inside <think>...</think>, or null when the turn had no complete think block. */
  think: string | null;
  /** What the reasoning should depend on: e.g. the env group id (initial state) or the turn's state text. */
  stateKey?: string | number;
}

/**
 * Input-dependence proxy (RAGEN-2's template collapse is reasoning that ignores the input): the fraction of
 * samples whose (normalised) think text also occurs for a different stateKey. 0 when every reasoning is
 * specific to its input; 1 when one template is used for every input. NaN for no samples.
 */
export function crossStateShared(samples: readonly { think: string; stateKey: string | number }[]): number {
  if (samples.length === 0) return NaN;
  const statesByThink = new Map<string, Set<string | number>>();
  for (const s of samples) {
    const key = normalise(s.think);
    let states = statesByThink.get(key);
    if (!states) statesByThink.set(key, (states = new Set()));
    states.add(s.stateKey);
  }
  let shared = 0;
  for (const s of samples) if (statesByThink.get(normalise(s.think))!.size > 1) shared += 1;
  return shared / samples.length;
}

export interface ReasoningMetricsOptions {
  /** Token counter for `reasoning_length/mean`; default `countWords`. The trainer passes the model tokenizer. */
  countTokens?: TokenCounter;
}

/**
 * The step's reasoning metrics from its turns' think texts: `reasoning_length/mean` (over turns with a think
 * block), `reasoning/valid_thinking_rate`, `reasoning/distinct_{1,2,3}`, `reasoning/unique_fraction`,
 * `reasoning/pairwise_diversity` and, when every sample has a stateKey, `reasoning/cross_state_shared`.
 * A statistic with no data is NaN (the sinks write it as null).
 */
export function reasoningMetrics(
  samples: readonly ReasoningSample[],
  opts: ReasoningMetricsOptions = {},
): Record<string, number> {
  const countTokens = opts.countTokens ?? countWords;
  const valid = samples.filter((s): s is ReasoningSample & { think: string } => typeof s.think === 'string');
  const thinks = valid.map((s) => s.think);
  let lengthSum = 0;
  for (const t of thinks) {
    const n = countTokens(t);
    if (!Number.isFinite(n) || n < 0)
      throw new Error(`token counter returned ${n} for a think text; expected a count >= 0`);
    lengthSum += n;
  }
  const metrics: Record<string, number> = {
    'reasoning_length/mean': thinks.length === 0 ? NaN : lengthSum / thinks.length,
    'reasoning/valid_thinking_rate': samples.length === 0 ? NaN : valid.length / samples.length,
    'reasoning/distinct_1': distinctN(thinks, 1),
    'reasoning/distinct_2': distinctN(thinks, 2),
    'reasoning/distinct_3': distinctN(thinks, 3),
    'reasoning/unique_fraction': uniqueFraction(thinks),
    'reasoning/pairwise_diversity': pairwiseDiversity(thinks),
  };
  if (samples.length > 0 && samples.every((s) => s.stateKey !== undefined)) {
    metrics['reasoning/cross_state_shared'] = crossStateShared(
      valid.map((s) => ({ think: s.think, stateKey: s.stateKey! })),
    );
  }
  return metrics;
}

/** The parts of src/agent's `Trajectory` / `TurnRecord` that reasoning metrics read (structural type). */
export interface TrajectoryLike {
  groupId: number;
  turns: readonly { turn: number; state: string; think: string; formatOk: boolean }[];
}

export interface SampleSelection {
  /** 'all' turns (default) or only each trajectory's 'first' turn (RAGEN-2's first-turn collapse sample). */
  turns?: 'all' | 'first';
  /** What the reasoning should depend on: the turn's 'state' text (default) or the env 'group' id. */
  stateKey?: 'state' | 'group';
}

/** Reasoning samples from rollout trajectories; a turn whose format failed counts as "no think block". */
export function reasoningSamplesFromTrajectories(
  trajectories: readonly TrajectoryLike[],
  sel: SampleSelection = {},
): ReasoningSample[] {
  const samples: ReasoningSample[] = [];
  for (const traj of trajectories) {
    const turns = sel.turns === 'first' ? traj.turns.slice(0, 1) : traj.turns;
    for (const t of turns) {
      samples.push({ think: t.formatOk ? t.think : null, stateKey: sel.stateKey === 'group' ? traj.groupId : t.state });
    }
  }
  return samples;
}
