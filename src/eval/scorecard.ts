// A checkpoint scorecard: play every evaluation suite with a policy and summarise each suite in a few numbers a
// user can act on (is it better than the last checkpoint? does it generalise? did its reasoning collapse?).
//
// Any policy behind the ScorecardPolicy interface can be scored: the tfjs model (modelPolicy.ts) or a scripted
// agent (scripted.ts). The protocol is RAGEN's validation protocol (spec §1): fixed seeds from 123, the run's
// turn / action / token limits, temperature 0.5. With k > 1 every seed is played k times (one env group of size k,
// all members reset with the seed), which gives pass@k.
//
// Per suite (SuiteScore below): success with a 95% Wilson interval, the best possible agent's expected success on
// the same seeds under the same protocol (./optimum.ts), pass@k, mean reward, step efficiency against the BFS /
// planner optimum, action validity, format-error rate, reasoning length, reasoning diversity, and whether the
// reasoning is about the state (grounding: the training metrics' reasoning/grounding*, src/metrics/grounding.ts).
// Deterministic given the eval seed, the backend and the batch size (sampling seeds are mixed from the eval seed,
// the suite name and the first seed of the batch).
import { MIN_TEMPERATURE } from '../model/config';
import { SokobanEnv, FrozenLakeEnv, fnv1a32, makeEnv, planFrozenLake, solveSokoban } from '../../envs/index';
import {
  EnvGroupManager,
  envRegistry,
  runRollouts,
  type AgentFormat,
  type GenerateFn,
  type Trajectory,
} from '../agent/index';
import { countWords, reasoningMetrics, reasoningSamplesFromTrajectories } from '../metrics/reasoning';
import { groundingMetrics, groundingTurnsOf, type GroundingTurn } from '../metrics/grounding';
import { mixSeed } from '../model/seeded';
import type { EvalSuite, SuiteKind } from './suites';
import { optimalSuccess } from './optimum';
import { finiteMean, passAtK, wilsonInterval } from './stats';

export const SCORECARD_FORMAT = 'ragen-ts-scorecard/1';

/** How an agent talks (src/agent/rollout.ts): the prompt and answer format of the run it was trained in. */
export type { AgentFormat };

/** The evaluation protocol, shared by a checkpoint and its baseline so their numbers compare. */
export interface EvalProtocol {
  /** Initial states (seeds) per suite: baseSeed, baseSeed+1, ... (RAGEN: 256; tiny presets: 32). */
  episodes: number;
  /** Rollouts per seed (the k of pass@k); 1 = RAGEN's validation. */
  k: number;
  /** First seed (RAGEN `seed.val`, 123). */
  baseSeed: number;
  /** Sampling temperature (RAGEN val 0.5; 0 = greedy). */
  temperature: number;
  /** Seed of token sampling (and of scripted agents' coins). */
  seed: number;
  /** Episodes per generate batch; bounds memory and sets the progress granularity. Part of determinism. */
  batchSize: number;
}

/** What a policy sees of the batch it is asked to play (scripted agents read the live envs from the manager). */
export interface EvalBatchContext {
  suite: EvalSuite;
  /** The env groups of this batch; prompts arrive in the order of `manager.activeRollouts()`. */
  manager: EnvGroupManager;
  format: AgentFormat;
  temperature: number;
  /** Sampling seed of this batch. */
  seed: number;
}

/** Anything that can play the agent protocol: the tfjs policy, or a scripted agent. */
export interface ScorecardPolicy {
  /** Shown in the scorecard (e.g. the checkpoint directory, or 'scripted-optimal'). */
  readonly name: string;
  /** A GenerateFn for one batch of env groups. */
  generateFn(ctx: EvalBatchContext): GenerateFn;
  /** Reasoning length unit: the model tokenizer's token count; default whitespace words. */
  countTokens?(text: string): number;
  /** 'tokens' or 'words' (default 'words'). */
  readonly lengthUnit?: string;
}

export interface SuiteScore {
  suite: string;
  kind: SuiteKind;
  tag: string;
  description: string;
  /** Seeds played. */
  seeds: number;
  /** Rollouts per seed. */
  k: number;
  /** seeds x k. */
  episodes: number;
  /** Fraction of episodes that reached the goal in budget, with a 95% Wilson interval over the episodes. */
  success: { rate: number; lo: number; hi: number; successes: number };
  /**
   * Expected success of the best possible agent on the same seeds under the same protocol (turns, actions per
   * answer played without a look in between, action budget): the ceiling to read `success` against (./optimum.ts).
   */
  optimum: number;
  /** Mean over seeds of "at least one of the k rollouts succeeded" (RAGEN pass@group_size). Equals success for k = 1. */
  passAtK: number;
  /** Mean env reward per episode (no format penalty). */
  meanReward: number;
  /** Mean of env reward + format penalty (what the trainer optimises). */
  meanScore: number;
  /** Mean over successful episodes of optimal actions / actions used (1 = as short as the BFS / planner optimum). */
  stepEfficiency: number;
  /** Mean primitive actions used by successful episodes. */
  actionsPerSuccess: number;
  /** Mean optimal action count of the same episodes. */
  optimalActions: number;
  /** Parsed actions that name one of the env's actions / all parsed actions (well-formed turns only). */
  actionValidity: number;
  /** Turns without a well-formed `<think>…</think><answer>…</answer>` / all turns. */
  formatErrorRate: number;
  /** Mean turns played per episode. */
  meanTurns: number;
  /** Mean reasoning length (inside <think>) of well-formed turns, in `lengthUnit`. */
  reasoningLength: number;
  lengthUnit: string;
  /**
   * Reasoning diversity across all turns of the suite: distinct-n (distinct n-grams / n-grams, pooled), the
   * fraction of distinct think texts, and 1 − mean pairwise Jaccard similarity. An echo policy scores ~0.
   */
  diversity: { distinct1: number; distinct2: number; uniqueFraction: number; pairwise: number };
  /**
   * Is the reasoning about the state? The training metrics reasoning/grounding* over the suite's turns. Absent in
   * scorecards written before it existed (shown as '-').
   */
  grounding?: SuiteGrounding;
}

/** Checkable claims in <think> (src/metrics/grounding.ts), over all turns of a suite; NaN where undefined. */
export interface SuiteGrounding {
  /** True claims / checkable claims, checked against the observation of the turn (reasoning/grounding). */
  rate: number;
  /**
   * The same claims checked against another state of the suite (reasoning/grounding_blind): what reasoning that
   * ignores the board scores, the chance level to read `rate` against.
   */
  blind: number;
  /** Checkable claims per turn (reasoning/grounding_claims); 0 when the reasoning makes none. */
  claimsPerTurn: number;
  /** Turns whose reasoning names a choice equal to the answer / turns whose reasoning names one (reasoning/answer_agreement). */
  answerAgreement: number;
}

export interface Scorecard {
  format: typeof SCORECARD_FORMAT;
  policy: string;
  protocol: EvalProtocol;
  agent: AgentFormat;
  suites: SuiteScore[];
}

export interface ScorecardProgress {
  suite: string;
  suiteIndex: number;
  suiteCount: number;
  episodesDone: number;
  episodesTotal: number;
}

export interface ScorecardOptions {
  onProgress?: (p: ScorecardProgress) => void;
  /**
   * Every played episode, batch by batch as the suite is played (group ids already name the seed across the
   * suite: seed = protocol.baseSeed + groupId). Awaited, so a writer can keep up.
   */
  onEpisodes?: (suite: EvalSuite, trajectories: readonly Trajectory[]) => void | Promise<void>;
}

/**
 * The largest protocol `ragen eval` (and the playground) will play, checked before any work: a typo such as
 * `--k 9007199254740991` is refused in one line instead of running for ever. Seeds stay below 2^31 so that every
 * env's generator and the sampler take them as they are.
 */
export const PROTOCOL_LIMITS = {
  /** Initial states per suite (RAGEN validates on 256). */
  episodes: 100_000,
  /** Rollouts per seed (pass@k). */
  k: 1_000,
  /** Episodes (seeds x rollouts) per suite. */
  episodesTimesK: 1_000_000,
  /** Episodes per generate batch. */
  batchSize: 4_096,
  /** Largest seed: baseSeed + episodes - 1 and the sampling seed. */
  seed: 2 ** 31 - 1,
  /** Largest sampling temperature. */
  temperature: 100,
} as const;

export function checkProtocol(p: EvalProtocol): void {
  const L = PROTOCOL_LIMITS;
  const integer = (v: number, name: string, min: number, max: number) => {
    const range = min === 1 ? `a positive integer at most ${max}` : `an integer from ${min} to ${max}`;
    if (!Number.isInteger(v) || v < min || v > max)
      throw new Error(`eval protocol: ${name} must be ${range}, got ${v}`);
  };
  integer(p.episodes, 'episodes', 1, L.episodes);
  integer(p.k, 'k', 1, L.k);
  integer(p.batchSize, 'batchSize', 1, L.batchSize);
  integer(p.baseSeed, 'baseSeed', 0, L.seed);
  integer(p.seed, 'seed', 0, L.seed);
  if (p.episodes * p.k > L.episodesTimesK) {
    throw new Error(
      `eval protocol: episodes x k must be at most ${L.episodesTimesK} per suite, got ${p.episodes} x ${p.k}`,
    );
  }
  if (p.baseSeed + p.episodes - 1 > L.seed) {
    throw new Error(
      `eval protocol: the last seed (baseSeed ${p.baseSeed} + episodes ${p.episodes} - 1) must be at most ${L.seed}`,
    );
  }
  if (!(p.temperature === 0 || (p.temperature >= MIN_TEMPERATURE && p.temperature <= L.temperature))) {
    throw new Error(
      `eval protocol: temperature must be 0 (greedy) or from ${MIN_TEMPERATURE} to ${L.temperature}, got ${p.temperature}`,
    );
  }
}

/** Plays every suite and returns the scorecard. */
export async function runScorecard(
  policy: ScorecardPolicy,
  suites: readonly EvalSuite[],
  protocol: EvalProtocol,
  format: AgentFormat,
  opts: ScorecardOptions = {},
): Promise<Scorecard> {
  checkProtocol(protocol);
  if (suites.length === 0) throw new Error('runScorecard: no suite to play');
  const names = new Set<string>();
  for (const s of suites) {
    if (names.has(s.name)) throw new Error(`runScorecard: two suites are named '${s.name}'`);
    names.add(s.name);
    makeEnv(s.tag, s.config); // fail before any work on a bad tag or env config
  }
  const scores: SuiteScore[] = [];
  for (let i = 0; i < suites.length; i++) {
    scores.push(
      await scoreSuite(policy, suites[i], protocol, format, async (done, played) => {
        await opts.onEpisodes?.(suites[i], played);
        opts.onProgress?.({
          suite: suites[i].name,
          suiteIndex: i,
          suiteCount: suites.length,
          episodesDone: done,
          episodesTotal: protocol.episodes * protocol.k,
        });
      }),
    );
  }
  return {
    format: SCORECARD_FORMAT,
    policy: policy.name,
    protocol: { ...protocol },
    agent: { ...format },
    suites: scores,
  };
}

async function playSuite(
  policy: ScorecardPolicy,
  suite: EvalSuite,
  protocol: EvalProtocol,
  format: AgentFormat,
  progress: (episodesDone: number, played: readonly Trajectory[]) => Promise<void>,
): Promise<{ trajectories: Trajectory[]; groundingTurns: GroundingTurn[] }> {
  const registry = envRegistry({ responseLength: format.responseLength });
  const seedsPerBatch = Math.max(1, Math.floor(protocol.batchSize / protocol.k));
  const all: Trajectory[] = [];
  // Read while this batch's envs are at hand (env ids restart in every batch): action names, a Bandit's arms.
  const groundingTurns: GroundingTurn[] = [];
  for (let start = 0; start < protocol.episodes; start += seedsPerBatch) {
    const n = Math.min(seedsPerBatch, protocol.episodes - start);
    const manager = new EnvGroupManager(
      {
        mode: 'val',
        envGroups: n,
        groupSize: protocol.k,
        tags: [
          {
            tag: suite.tag,
            nGroups: n,
            ...(suite.config !== undefined ? { config: suite.config } : {}),
            ...(suite.maxActionsPerTraj !== undefined ? { maxActionsPerTraj: suite.maxActionsPerTraj } : {}),
          },
        ],
        baseSeed: protocol.baseSeed + start,
        formatPenalty: format.formatPenalty,
      },
      registry,
    );
    const seed = mixSeed(protocol.seed, fnv1a32(suite.name), start);
    const generate = policy.generateFn({ suite, manager, format, temperature: protocol.temperature, seed });
    const result = await runRollouts(manager, generate, format);
    // Group ids restart at 0 in every batch: shift them so they name the seed across the whole suite.
    const played = result.trajectories.map((t) => ({ ...t, groupId: t.groupId + start }));
    all.push(...played);
    groundingTurns.push(...groundingTurnsOf(result.trajectories, (id) => manager.entries[id].env));
    await progress((start + n) * protocol.k, played);
  }
  return { trajectories: all, groundingTurns };
}

/** The fewest primitive actions that solve the suite's initial state of `seed` (at most `upTo`, the actions used). */
function optimalActionCount(suite: EvalSuite, seed: number, upTo: number): number {
  const env = makeEnv(suite.tag, suite.config);
  env.reset(seed);
  if (env instanceof SokobanEnv) {
    const plan = solveSokoban(env.state, upTo);
    return plan === null ? upTo : plan.length;
  }
  if (env instanceof FrozenLakeEnv) {
    // Shortest path on the ice (no slips): the least any agent can need, since a move goes at most one cell.
    const planner = planFrozenLake(env.map, 1, upTo);
    for (let k = 0; k <= upTo; k++) if (planner.successProbability(env.map.start, k) >= 1) return k;
    return upTo;
  }
  return 1; // Bandit: one pull
}

async function scoreSuite(
  policy: ScorecardPolicy,
  suite: EvalSuite,
  protocol: EvalProtocol,
  format: AgentFormat,
  progress: (episodesDone: number, played: readonly Trajectory[]) => Promise<void>,
): Promise<SuiteScore> {
  const { trajectories, groundingTurns } = await playSuite(policy, suite, protocol, format, progress);
  const episodes = trajectories.length;
  const successes = trajectories.filter((t) => t.success).length;
  const interval = wilsonInterval(successes, episodes);

  // pass@k per seed (group), averaged over seeds.
  const bySeed = new Map<number, Trajectory[]>();
  for (const t of trajectories) bySeed.set(t.groupId, [...(bySeed.get(t.groupId) ?? []), t]);
  const passes = [...bySeed.values()].map((group) =>
    passAtK(group.length, group.filter((t) => t.success).length, protocol.k),
  );

  // Step efficiency of successful episodes against the optimum of their initial state.
  const optimumCache = new Map<string, number>();
  const efficiencies: number[] = [];
  const used: number[] = [];
  const optimal: number[] = [];
  for (const t of trajectories) {
    if (!t.success) continue;
    const actions = t.status.numActions;
    const key = `${t.status.seed}/${actions}`;
    let best = optimumCache.get(key);
    if (best === undefined) optimumCache.set(key, (best = optimalActionCount(suite, t.status.seed, actions)));
    used.push(actions);
    optimal.push(best);
    efficiencies.push(actions === 0 ? 1 : best / actions);
  }

  // Format errors and action validity, per turn and per parsed action.
  const actionNames = new Set(makeEnv(suite.tag, suite.config).actionNames.map((a) => a.toLowerCase()));
  let turns = 0;
  let formatErrors = 0;
  let parsed = 0;
  let valid = 0;
  for (const t of trajectories) {
    for (const turn of t.turns) {
      turns++;
      if (!turn.formatOk) {
        formatErrors++;
        continue;
      }
      for (const a of turn.parsedActions) {
        parsed++;
        if (actionNames.has(a.toLowerCase())) valid++;
      }
    }
  }

  const countTokens = policy.countTokens ? (text: string) => policy.countTokens!(text) : countWords;
  const reasoning = reasoningMetrics(reasoningSamplesFromTrajectories(trajectories), { countTokens });
  // The blind check draws its other state from the whole suite, with the eval seed.
  const grounded = groundingMetrics(groundingTurns, protocol.seed);

  return {
    suite: suite.name,
    kind: suite.kind,
    tag: suite.tag,
    description: suite.description,
    seeds: protocol.episodes,
    k: protocol.k,
    episodes,
    success: { rate: successes / episodes, lo: interval.lo, hi: interval.hi, successes },
    optimum: optimalSuccess(suite, protocol, format).mean,
    passAtK: finiteMean(passes),
    meanReward: finiteMean(trajectories.map((t) => t.totalReward)),
    meanScore: finiteMean(trajectories.map((t) => t.score)),
    stepEfficiency: finiteMean(efficiencies),
    actionsPerSuccess: finiteMean(used),
    optimalActions: finiteMean(optimal),
    actionValidity: parsed === 0 ? NaN : valid / parsed,
    formatErrorRate: turns === 0 ? NaN : formatErrors / turns,
    meanTurns: finiteMean(trajectories.map((t) => t.turns.length)),
    reasoningLength: reasoning['reasoning_length/mean'],
    lengthUnit: policy.lengthUnit ?? 'words',
    diversity: {
      distinct1: reasoning['reasoning/distinct_1'],
      distinct2: reasoning['reasoning/distinct_2'],
      uniqueFraction: reasoning['reasoning/unique_fraction'],
      pairwise: reasoning['reasoning/pairwise_diversity'],
    },
    grounding: {
      rate: grounded['reasoning/grounding'],
      blind: grounded['reasoning/grounding_blind'],
      claimsPerTurn: grounded['reasoning/grounding_claims'],
      answerAgreement: grounded['reasoning/answer_agreement'],
    },
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Baselines and the regression gate

/** Current minus baseline, per suite present in both. Success and pass@k deltas are in percentage points. */
export interface SuiteDelta {
  suite: string;
  successPoints: number;
  passAtKPoints: number;
  meanReward: number;
  stepEfficiency: number;
  formatErrorPoints: number;
  distinct2: number;
}

export interface Comparison {
  baseline: string;
  deltas: SuiteDelta[];
  /** Suites of the current scorecard that the baseline lacks (no delta, not gated). */
  missingInBaseline: string[];
}

export function compareScorecards(current: Scorecard, baseline: Scorecard): Comparison {
  const byName = new Map(baseline.suites.map((s) => [s.suite, s]));
  const deltas: SuiteDelta[] = [];
  const missingInBaseline: string[] = [];
  for (const s of current.suites) {
    const b = byName.get(s.suite);
    if (!b) {
      missingInBaseline.push(s.suite);
      continue;
    }
    deltas.push({
      suite: s.suite,
      successPoints: 100 * (s.success.rate - b.success.rate),
      passAtKPoints: 100 * (s.passAtK - b.passAtK),
      meanReward: s.meanReward - b.meanReward,
      stepEfficiency: s.stepEfficiency - b.stepEfficiency,
      formatErrorPoints: 100 * (s.formatErrorRate - b.formatErrorRate),
      distinct2: s.diversity.distinct2 - b.diversity.distinct2,
    });
  }
  return { baseline: baseline.policy, deltas, missingInBaseline };
}

/** Suites whose success dropped by MORE than `maxDropPoints` percentage points against the baseline. */
export function findRegressions(
  comparison: Comparison,
  maxDropPoints: number,
): { suite: string; dropPoints: number }[] {
  if (!(maxDropPoints >= 0) || !Number.isFinite(maxDropPoints)) {
    throw new Error(`regression threshold must be a number of percentage points >= 0, got ${maxDropPoints}`);
  }
  // A tiny tolerance keeps float dust (e.g. 0.3 - 0.1 in points) from failing a gate set exactly at the drop.
  return comparison.deltas
    .filter((d) => -d.successPoints > maxDropPoints + 1e-9)
    .map((d) => ({ suite: d.suite, dropPoints: -d.successPoints }));
}

// ---------------------------------------------------------------------------------------------------------------
// JSON (NaN is written as null and read back as NaN)

export function scorecardToJson(card: Scorecard, comparison?: Comparison): string {
  const replacer = (_key: string, value: unknown) =>
    typeof value === 'number' && !Number.isFinite(value) ? null : value;
  return JSON.stringify(comparison ? { ...card, comparison } : card, replacer, 2) + '\n';
}

/** Reads a scorecard written by scorecardToJson; the Error names what is wrong. */
export function parseScorecardJson(text: string, source = 'scorecard'): Scorecard {
  let raw: unknown;
  try {
    raw = JSON.parse(text, (_key, value) => (value === null ? NaN : value));
  } catch (err) {
    throw new Error(`${source} is not valid JSON: ${(err as Error).message}`, { cause: err });
  }
  const card = raw as Partial<Scorecard>;
  if (card?.format !== SCORECARD_FORMAT) {
    throw new Error(
      `${source} is not a scorecard (format ${JSON.stringify(card?.format)}, expected "${SCORECARD_FORMAT}")`,
    );
  }
  if (
    !Array.isArray(card.suites) ||
    card.suites.some((s) => typeof s?.suite !== 'string' || typeof s?.success?.rate !== 'number')
  ) {
    throw new Error(`${source}: suites must be a list of suite scores with a name and a success rate`);
  }
  return card as Scorecard;
}
