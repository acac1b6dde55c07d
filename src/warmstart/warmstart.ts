// The warm start of the tiny presets: supervised fine-tuning (SFT) of a freshly initialised tiny Qwen2-style model on
// solver-written demonstrations (demonstrations.ts), saved as a Hugging Face checkpoint that the Trainer loads from
// public/warmstart/<preset>/ (docs/architecture.md "The policy and its warm start"). RAGEN itself needs none of this:
// it starts from an instruct model that already writes <think>…</think><answer>…</answer>.
//
//   demonstrations  -> tokenizer (byte-level BPE over the demonstrations + every compact prompt text the preset's
//                      env tags can show, so one checkpoint also evaluates on e.g. BanditTest's arm names)
//                   -> tiny model (the preset's `model.tiny` shape, vocabulary = the tokenizer's)
//                   -> SFT: cross-entropy on assistant tokens only (RAGEN's response mask), AdamW, length buckets
//                   -> checkpoint (config.json, model.safetensors, tokenizer.json, ...)
//
// Everything is seeded (demonstration seeds, weight init, batch order): the same recipe on the same backend gives
// the same checkpoint. On one CPU core (wasm) `ragen warmstart` takes minutes for Bandit, about 41 minutes for
// FrozenLake and about 1.8 hours for Sokoban (three SFT cycles): reading a board takes thousands of supervised steps
// (docs/findings.md).
import * as tf from '@tensorflow/tfjs';
import { ENV_TAGS, Rng, makeEnv } from '../../envs/index';
import {
  COMPACT_INSTRUCTIONS,
  EnvGroupManager,
  compactPromptFixedText,
  envRegistry,
  runRollouts,
  targetMaskFromPositionMask,
  type RenderedPrompt,
  type Trajectory,
} from '../agent/index';
import { AdamW } from '../model/adamw';
import type { Qwen2Config } from '../model/config';
import { mixSeed } from '../model/seeded';
import { groundingMetrics, groundingTurnsOf } from '../metrics/grounding';
import { policyGenerateFn } from '../starpo/policyAgent';
import { embed, tokenLogProbs as fusedTokenLogProbs } from '../model/kernels/index';
import { Qwen2Model, initQwen2Weights } from '../model/qwen2';
import { namedVariableGrads } from '../model/scoring';
import { DEFAULT_SPECIAL_TOKENS, buildTinyTokenizer, type Tokenizer } from '../model/tokenizer';
import { agentFormatFromConfig, envBlocks, type RunConfig } from '../starpo/config';
import {
  DEMO_SEED_BASE,
  demonstrationStats,
  generateDemonstrations,
  type Demonstration,
  type DemonstrationStats,
} from './demonstrations';
import { presetConfig, resolvePreset } from '../starpo/presets';

// ---------------------------------------------------------------------------------------------------------------
// Recipes

/** How one preset's warm start is made. Every field is a knob of the pipeline above. */
export interface WarmStartRecipe {
  /** Demonstration episodes per training env block of the preset. */
  episodes: number;
  /** Probability that a demonstrated action is deliberately imperfect (see DemonstrationConfig). */
  imperfectFraction: number;
  /** [fewest, most] actions per demonstrated answer; undefined = [1, agent.maxActionsPerTurn]. */
  actionsPerAnswer?: readonly [number, number];
  /** Bandit: fraction of episodes played with other arm names (teaches copying names from the prompt). */
  alternateArmPairFraction?: number;
  /**
   * SFT also trains on the prompt (the env's observations), not only on the responses: RAGEN's April-2025
   * `enable_response_mask=false`, applied to the warm start only (RL keeps `algorithm.responseMaskOnly`).
   * Predicting the observations is what teaches a tiny model to read them: with it, the FrozenLake warm start
   * copies its position into its reasoning; without it, after the same steps, it does not (docs/findings.md).
   */
  trainOnPrompt?: boolean;
  /** Ids of the tiny tokenizer: 256 bytes + BPE merges + special tokens (merges may stop earlier). */
  vocabSize: number;
  /** SFT optimizer steps. */
  steps: number;
  /** Sequences (episodes) per SFT step. */
  batchSize: number;
  /** Peak AdamW learning rate (linear warm-up, then cosine decay to 10 % of it). */
  lr: number;
  /** Steps of linear learning-rate warm-up. */
  warmupSteps: number;
  /** Seed of demonstrations' RNG streams, weight init and batch order. */
  seed: number;
  /**
   * Further SFT cycles after the first, in order (warm restarts): each with fresh AdamW moments, its own warm-up and
   * cosine decay, on new demonstrations played with the same settings and its own imperfectFraction. The tokenizer
   * comes from the first cycle's demonstrations alone, so every cycle trains as it would without the ones after it.
   */
  laterCycles?: readonly SftCycle[];
  /**
   * The single-arm preset whose run config plays the demonstrations and the check (default: the recipe's own name,
   * which is then a preset). Lets a multi-arm preset keep a warm start of its own.
   */
  playedAs?: string;
}

/** A further SFT cycle of a recipe (WarmStartRecipe.laterCycles). */
export interface SftCycle {
  /** Demonstration episodes per training env block. */
  episodes: number;
  /** As WarmStartRecipe.imperfectFraction, for this cycle's demonstrations. */
  imperfectFraction: number;
  /** As WarmStartRecipe.actionsPerAnswer, for this cycle's demonstrations (default: the recipe's). */
  actionsPerAnswer?: readonly [number, number];
  /** SFT optimizer steps of this cycle. */
  steps: number;
  /** Its peak learning rate (linear warm-up, then cosine decay to 10 % of it). */
  lr: number;
  warmupSteps: number;
  /**
   * Seed of this cycle's demonstrations and batch order. It must differ from the recipe's: demonstration seeds are
   * DEMO_SEED_BASE + seed x 1,000,000, so another seed means other initial states.
   */
  seed: number;
}

/**
 * The shipped recipes. Bandit's demonstrations pick the high-risk arm about half of the time, Sokoban's last cycle
 * plays random moves 45 % of the time and FrozenLake's last cycle sends one move per answer, so that RL has room (see
 * the report printed by `ragen warmstart` for the resulting success rates).
 */
export const WARMSTART_RECIPES = {
  'bandit-tiny': {
    episodes: 512,
    imperfectFraction: 0.5,
    // 0: the tiny model only learns Phoenix/Dragon. Mixing other arm names in (e.g. 0.5) teaches it to copy names
    // from the prompt, but needs several times more SFT steps than the 3-minute budget allows.
    alternateArmPairFraction: 0,
    vocabSize: 1024,
    // 400, not 150: after 150 steps the answer already repeats the arm the reasoning names (99 %), but loosely
    // enough that RL moves the answer token alone and half of the trained responses name one arm and answer the
    // other; after 400 the answer stays the reasoning's choice through RL (docs/findings.md).
    steps: 400,
    batchSize: 8,
    lr: 5e-3,
    warmupSteps: 10,
    seed: 0,
  },
  // The echo-trap lesson's warm start: bandit-tiny's recipe with 150 SFT steps instead of 400. Its loose tie between
  // reasoning and answer is part of how vanilla StarPO collapses on cue: from the 400-step warm start, vanilla does
  // not collapse on the first seed tried (docs/lab/echo-trap-probes.md, "The preset").
  'echo-trap': {
    episodes: 512,
    imperfectFraction: 0.5,
    alternateArmPairFraction: 0,
    vocabSize: 1024,
    steps: 150,
    batchSize: 8,
    lr: 5e-3,
    warmupSteps: 10,
    seed: 0,
    playedAs: 'bandit-tiny',
  },
  'frozenlake-tiny': {
    // One sample per turn (the preset's single_turn mode): 8,192 episodes give about 28,000 samples.
    episodes: 8192,
    // 0: the planner's moves as they are, one to three per answer.
    imperfectFraction: 0,
    actionsPerAnswer: [1, 3],
    vocabSize: 768,
    // The copy of "Player: (r, c)" into the reasoning forms after about 3,000 steps, the goal's after about 8,000
    // (per-token probabilities, experiments/lab/token-probs.ts); 400 steps copied nothing. 16,000 make the reasoning
    // 96 % true of the lake (79 % after 8,000).
    steps: 16000,
    batchSize: 8,
    lr: 5e-3,
    warmupSteps: 20,
    seed: 0,
    trainOnPrompt: true,
    // A second, short cycle on demonstrations of one move per answer: the warm start then reads the lake as before
    // (93 % of its claims true) but sends one move per turn, which on a 5-turn, 10-action protocol leaves half of the
    // budget unused and plays 22 % held-out (32.5 % after the first cycle alone). That is the starting point RL needs:
    // it learns to send two or three moves per answer and reaches 36 % (docs/findings.md). From the one-cycle warm
    // start, whose answer lengths are already mixed, RL only adds about 2 points: on a slippery lake the few
    // points between two moves are buried in the slips, while the value of using the budget is not. 40 steps, not
    // more: they leave about 1 % of answers with a second move, which RL finds and amplifies; after 300 steps none
    // are left and RL never finds them (23.7 % -> 23.2 %).
    laterCycles: [
      { episodes: 1024, imperfectFraction: 0, actionsPerAnswer: [1, 1], steps: 40, lr: 1e-3, warmupSteps: 20, seed: 1 },
    ],
  },
  'sokoban-tiny': {
    // One sample per turn (the preset's single_turn mode), one move per turn: 8,192 episodes give about 35,000
    // samples (4.2 moves per solved level).
    episodes: 8192,
    // 0: the BFS plan as it is, in the first two cycles (the third adds the mistakes; see laterCycles).
    imperfectFraction: 0,
    // One move per answer: the board is read again before every move (closed loop).
    actionsPerAnswer: [1, 1],
    vocabSize: 768,
    // A 4-layer x 128 model: ~4x the compute per token of the other two (0.73 s a step on one core). As on
    // FrozenLake, the reasoning's copy of the coordinates forms only after thousands of steps with the loss on the
    // observations too (grounding 15 % after 1,000 steps, 58 % after 2,000: docs/findings.md).
    steps: 7000,
    batchSize: 8,
    lr: 3e-3,
    warmupSteps: 20,
    seed: 0,
    trainOnPrompt: true,
    // A second cycle of 3,000 steps at a third of the peak rate on 8,192 new demonstrations: held-out success 78 % ->
    // 88 %, the reasoning 91 % -> 97 % true of the board (docs/findings.md). The first cycle alone has not converged:
    // its success still climbs steeply at its end (56 % at 5,000 steps, 78 % at 7,000).
    // A third, short cycle on demonstrations whose moves are random 45 % of the time (the demonstrator then solves
    // 55 %): the reasoning stays true of the board (96 %) while the play drops from 88 % to 52 % held-out. That is the
    // starting point RL needs, a policy that reads the board but has not learned to play it well (an instruct model's
    // situation in RAGEN), so that RL has something to learn: the preset's StarPO-S takes it to 78-80 %. From the
    // two-cycle warm start (88 %) RL adds nothing (docs/findings.md).
    laterCycles: [
      { episodes: 8192, imperfectFraction: 0, steps: 3000, lr: 1e-3, warmupSteps: 20, seed: 2 },
      { episodes: 4096, imperfectFraction: 0.45, steps: 1000, lr: 1e-3, warmupSteps: 20, seed: 1 },
    ],
  },
} as const satisfies Record<string, WarmStartRecipe>;

export type WarmStartPreset = keyof typeof WARMSTART_RECIPES;
export const WARMSTART_PRESETS = Object.keys(WARMSTART_RECIPES) as WarmStartPreset[];

/** The run config a warm start's demonstrations and check are played with (see WarmStartRecipe.playedAs). */
export function warmStartRunConfig(name: WarmStartPreset): RunConfig {
  const recipe: WarmStartRecipe = WARMSTART_RECIPES[name];
  return presetConfig(recipe.playedAs ?? name);
}

/**
 * The warm-start recipe name a preset uses: the last path part of its `model.warmStart` (so `echo-trap`, which
 * starts from 'warmstart/bandit-tiny', maps to 'bandit-tiny'). Throws for presets without a warm start.
 */
export function warmStartRecipeName(preset: string): WarmStartPreset {
  // Every arm of a comparison preset (echo-trap) starts from the same warm start: the first arm's says which.
  const path = resolvePreset(preset).arms[0].config.model.warmStart;
  const name = path?.split('/').pop();
  if (!name || !(WARMSTART_PRESETS as string[]).includes(name)) {
    throw new Error(
      `preset '${preset}' has no warm start to build (model.warmStart is ${JSON.stringify(path)}); ` +
        `warm starts exist for: ${WARMSTART_PRESETS.join(', ')}`,
    );
  }
  return name as WarmStartPreset;
}

// ---------------------------------------------------------------------------------------------------------------
// Demonstrations and tokenizer

/** Demonstrations for every training env block of `config`, played with the preset's agent settings. */
export function demonstrationsForRun(config: RunConfig, recipe: WarmStartRecipe): Demonstration[] {
  const demos: Demonstration[] = [];
  envBlocks(config, 'train').forEach((block, i) => {
    demos.push(
      ...generateDemonstrations({
        tag: block.tag,
        envConfig: block.config,
        episodes: recipe.episodes,
        // Blocks get disjoint seed ranges; all far above train/val seeds.
        firstSeed: DEMO_SEED_BASE + recipe.seed * 1_000_000 + i * 100_000,
        maxTurn: config.agent.maxTurn,
        maxActionsPerTurn: config.agent.maxActionsPerTurn,
        maxActionsPerTraj: block.maxActionsPerTraj,
        actionsPerAnswer: recipe.actionsPerAnswer,
        imperfectFraction: recipe.imperfectFraction,
        alternateArmPairFraction: recipe.alternateArmPairFraction,
        actionSep: config.agent.actionSep,
        responseMaskOnly: recipe.trainOnPrompt ? false : config.algorithm.responseMaskOnly,
        maxContextWindow: config.agent.maxContextWindow,
        turnNumbers: config.agent.turnNumbers,
      }),
    );
  });
  return demos;
}

/** Env families: a checkpoint made for one tag of a family should tokenize its siblings' prompts well too. */
const FAMILIES: readonly (readonly string[])[] = [
  ['Bandit', 'BanditTest'],
  ['SimpleSokoban', 'LargerSokoban', 'SokobanDifferentGridVocab'],
  ['FrozenLake'],
];

/** The env tags a preset's checkpoint may meet: its train and val tags and their families. */
export function warmStartTags(config: RunConfig): string[] {
  const own = new Set([...config.agent.trainEnvs, ...config.agent.valEnvs].map((b) => b.tag));
  const tags = new Set<string>();
  for (const tag of own) {
    tags.add(tag);
    for (const family of FAMILIES) if (family.includes(tag)) family.forEach((t) => tags.add(t));
  }
  return ENV_TAGS.filter((t) => tags.has(t));
}

/**
 * The tokenizer corpus: every demonstration's training text, plus for each tag the compact prompt's fixed words
 * and a few initial states (seeds just below the demonstration range; tokenizer text only, never trained on), so
 * prompt words of tags without demonstrations (e.g. BanditTest's arm names) get merges too.
 */
export function tokenizerCorpus(demos: readonly Demonstration[], tags: readonly string[], statesPerTag = 8): string[] {
  const corpus = demos.flatMap((d) => d.samples.map((sample) => sample.text));
  const registry = envRegistry();
  for (const tag of tags) {
    if (COMPACT_INSTRUCTIONS[tag] === undefined) throw new Error(`warm start: no compact prompt for env tag '${tag}'`);
    corpus.push(compactPromptFixedText(registry.promptInfo(tag)));
    const env = makeEnv(tag);
    for (let i = 0; i < statesPerTag; i++) corpus.push(env.reset(DEMO_SEED_BASE - 1 - i));
  }
  return corpus;
}

/** Every grid symbol the tags' boards use (their prompt vocabularies): each is always a token of its own. */
export function gridSymbols(tags: readonly string[]): string {
  const registry = envRegistry();
  return [...new Set(tags.flatMap((tag) => (registry.promptInfo(tag).gridVocab ?? []).map(([symbol]) => symbol)))].join(
    '',
  );
}

export function buildWarmStartTokenizer(
  demos: readonly Demonstration[],
  tags: readonly string[],
  vocabSize: number,
): Tokenizer {
  return buildTinyTokenizer(tokenizerCorpus(demos, tags), {
    vocabSize,
    specialTokens: DEFAULT_SPECIAL_TOKENS,
    isolate: gridSymbols(tags),
  });
}

/** A Hugging Face Qwen2 config for the preset's tiny shape and the tokenizer's vocabulary. */
export function tinyQwen2Config(tiny: RunConfig['model']['tiny'], vocabSize: number): Qwen2Config {
  return {
    architectures: ['Qwen2ForCausalLM'],
    model_type: 'qwen2',
    vocab_size: vocabSize,
    hidden_size: tiny.hiddenSize,
    intermediate_size: tiny.intermediateSize,
    num_hidden_layers: tiny.numLayers,
    num_attention_heads: tiny.numHeads,
    num_key_value_heads: tiny.numKvHeads,
    max_position_embeddings: tiny.maxPositions,
    rope_theta: tiny.ropeTheta,
    rms_norm_eps: 1e-6,
    tie_word_embeddings: true, // as Qwen2.5-0.5B; halves the parameters of a tiny model
    hidden_act: 'silu',
    torch_dtype: 'float32',
    initializer_range: 0.02,
  };
}

// ---------------------------------------------------------------------------------------------------------------
// SFT data

/** One tokenized training sequence: ids and, per prediction target ids[i + 1], whether it is trained on. */
export interface SftExample {
  ids: number[];
  /** Length ids.length - 1: targetMask[i] says whether ids[i + 1] is in the loss. */
  targetMask: boolean[];
}

/**
 * Tokenizes a training-mode rendering segment by segment (each segment starts with a special token, so this equals
 * tokenizing the whole text) and marks RAGEN's loss mask: positions in trainable segments, shifted by one.
 */
export function tokenizeRendered(tokenizer: Tokenizer, rendered: RenderedPrompt): SftExample {
  const ids: number[] = [];
  const positionMask: boolean[] = [];
  for (const segment of rendered.segments) {
    const segmentIds = tokenizer.encode(segment.text);
    ids.push(...segmentIds);
    for (let i = 0; i < segmentIds.length; i++) positionMask.push(segment.trainable);
  }
  return { ids, targetMask: targetMaskFromPositionMask(positionMask) };
}

/** Sequence lengths are padded up to a multiple of this: few distinct shapes (kernels, buffer pools). */
export const LENGTH_BUCKET = 32;

/** One SFT batch on the device. */
export interface SftBatch {
  /** Token ids [B, L], right-padded to a multiple of the length bucket. */
  ids: tf.Tensor2D;
  /** 1 = real token, 0 = padding [B, L]. */
  attention: tf.Tensor2D;
  /** Flat positions b * L + i whose next token ids[b][i + 1] is trained on [N]. */
  positions: tf.Tensor1D;
  /** The trained-on tokens ids[b][i + 1], in the order of `positions` [N]. */
  targets: tf.Tensor1D;
}

/** Pads and stacks examples into one batch (right padding; padding is masked out of attention). */
export function collate(examples: readonly SftExample[], padTokenId: number, bucket = LENGTH_BUCKET): SftBatch {
  if (examples.length === 0) throw new Error('collate: no examples');
  const length = Math.ceil(Math.max(...examples.map((e) => e.ids.length)) / bucket) * bucket;
  const rows = examples.length;
  const ids = new Int32Array(rows * length).fill(padTokenId);
  const attention = new Float32Array(rows * length);
  const positions: number[] = [];
  const targets: number[] = [];
  examples.forEach((e, r) => {
    e.ids.forEach((id, j) => {
      ids[r * length + j] = id;
      attention[r * length + j] = 1;
    });
    e.targetMask.forEach((on, j) => {
      if (!on) return;
      positions.push(r * length + j);
      targets.push(e.ids[j + 1]);
    });
  });
  if (positions.length === 0) throw new Error('collate: no trained token in the batch (empty loss masks)');
  return {
    ids: tf.tensor2d(ids, [rows, length], 'int32'),
    attention: tf.tensor2d(attention, [rows, length]),
    positions: tf.tensor1d(positions, 'int32'),
    targets: tf.tensor1d(targets, 'int32'),
  };
}

/**
 * Mean cross-entropy of the batch's trained-on tokens. The LM head runs only on the N trained positions, not on
 * all B x L: prompts are most of each sequence, and the head is the widest matmul of a tiny model.
 */
export function sftLoss(model: Qwen2Model, batch: SftBatch): tf.Scalar {
  return tf.tidy(() => {
    // The trained positions' rows (the row-gather kernel, whose gradient scatter-adds them back).
    const picked = embed(model.hidden(batch.ids, batch.attention), batch.positions);
    const [picks] = fusedTokenLogProbs(model.head(picked) as tf.Tensor2D, batch.targets);
    return tf.neg(picks.mean()) as tf.Scalar;
  });
}

/**
 * An endless, seeded stream of batches: each epoch shuffles the examples, groups them by length bucket (so a batch
 * pads little), cuts each bucket into batches of `batchSize` and shuffles the batch order.
 */
export function* batchStream(
  examples: readonly SftExample[],
  batchSize: number,
  seed: number,
  bucket = LENGTH_BUCKET,
): Generator<SftExample[]> {
  if (examples.length === 0) throw new Error('batchStream: no examples');
  if (!Number.isInteger(batchSize) || batchSize < 1)
    throw new Error(`batchStream: batchSize must be a positive integer, got ${batchSize}`);
  const rng = Rng.fromSeed(seed, 'warmstart/batches');
  for (;;) {
    const byBucket = new Map<number, SftExample[]>();
    for (const e of rng.shuffle(examples.slice())) {
      const key = Math.ceil(e.ids.length / bucket);
      const list = byBucket.get(key) ?? [];
      list.push(e);
      byBucket.set(key, list);
    }
    const batches: SftExample[][] = [];
    for (const key of [...byBucket.keys()].sort((a, b) => a - b)) {
      const list = byBucket.get(key)!;
      for (let i = 0; i < list.length; i += batchSize) batches.push(list.slice(i, i + batchSize));
    }
    yield* rng.shuffle(batches);
  }
}

// ---------------------------------------------------------------------------------------------------------------
// SFT

export interface SftOptions {
  steps: number;
  batchSize: number;
  lr: number;
  warmupSteps: number;
  seed: number;
  /** Global gradient-norm clip (RAGEN's actor uses 1.0). */
  gradClip?: number;
  /** AdamW decoupled weight decay (default 0.01). */
  weightDecay?: number;
  /** Called after every step with the step number (1-based) and that step's mean loss over its target tokens. */
  onStep?: (step: number, loss: number) => void | Promise<void>;
}

/** Linear warm-up to `lr`, then cosine decay to lr / 10 at the last step. */
export function learningRate(step: number, opts: Pick<SftOptions, 'steps' | 'lr' | 'warmupSteps'>): number {
  if (step < opts.warmupSteps) return (opts.lr * (step + 1)) / opts.warmupSteps;
  const progress = Math.min(1, (step - opts.warmupSteps) / Math.max(1, opts.steps - opts.warmupSteps));
  return opts.lr * (0.1 + 0.9 * 0.5 * (1 + Math.cos(Math.PI * progress)));
}

/**
 * Supervised fine-tuning: mean cross-entropy over the masked target tokens of each batch, AdamW, gradient clipping.
 * Returns the per-step losses.
 */
export async function trainSft(
  model: Qwen2Model,
  examples: readonly SftExample[],
  padTokenId: number,
  opts: SftOptions,
): Promise<number[]> {
  if (!Number.isInteger(opts.steps) || opts.steps < 1)
    throw new Error(`trainSft: steps must be a positive integer, got ${opts.steps}`);
  if (!(opts.lr > 0)) throw new Error(`trainSft: lr must be > 0, got ${opts.lr}`);
  const maxPositions = model.config.max_position_embeddings;
  const tooLong = examples.find((e) => e.ids.length > maxPositions);
  if (tooLong)
    throw new Error(
      `trainSft: a sequence has ${tooLong.ids.length} tokens, more than the model's ${maxPositions} positions`,
    );
  if (examples.some((e) => !e.targetMask.some(Boolean)))
    throw new Error('trainSft: an example has no trained token (empty loss mask)');

  const optimizer = new AdamW(model.variables, { lr: opts.lr, weightDecay: opts.weightDecay ?? 0.01 });
  const batches = batchStream(examples, opts.batchSize, opts.seed);
  const losses: number[] = [];
  try {
    for (let step = 0; step < opts.steps; step++) {
      optimizer.lr = learningRate(step, opts);
      const batch = collate(batches.next().value!, padTokenId);
      const { value, grads } = namedVariableGrads(model.variables, () => sftLoss(model, batch));
      await optimizer.stepClipped(grads, opts.gradClip ?? 1.0);
      const loss = (await value.data())[0];
      tf.dispose([value, batch.ids, batch.attention, batch.positions, batch.targets, ...Object.values(grads)]);
      if (!Number.isFinite(loss)) throw new Error(`trainSft: the loss became ${loss} at step ${step + 1}`);
      losses.push(loss);
      await opts.onStep?.(step + 1, loss);
    }
  } finally {
    optimizer.dispose();
  }
  return losses;
}

// ---------------------------------------------------------------------------------------------------------------
// Checking a policy: sampled rollouts through the agent protocol

export interface PolicyCheckOptions {
  /** Sampling temperature (RAGEN validation 0.5, rollouts 1.0). */
  temperature: number;
  /** Seed of token sampling. */
  seed: number;
  /** Env groups of the check (one episode each); default the config's agent.valGroups. */
  episodes?: number;
  /** 'val' = the config's validation blocks and seeds (default); 'train' = its training tags at validation seeds. */
  split?: 'val' | 'train';
}

/** Rates over the turns (format, actions) and episodes (success) of one env tag, or of all of them. */
export interface CheckRates {
  /** Fraction of turns whose response parsed as <think>…</think><answer>…</answer>. */
  formatRate: number;
  /** Fraction of turns with a well-formed answer whose actions are all valid env actions (at least one). */
  validActionRate: number;
  /** Fraction of episodes that succeeded (RAGEN `<Tag>/success`; Bandit: chose the high-risk arm). */
  success: number;
  turns: number;
  episodes: number;
}

export interface PolicyCheck extends CheckRates {
  /** The same rates per env tag. */
  perTag: Record<string, CheckRates>;
  /** reasoning/grounding, reasoning/grounding_blind, reasoning/answer_agreement (src/metrics/grounding.ts). */
  reasoning: Record<string, number>;
  /** Mean new tokens per turn. */
  meanResponseTokens: number;
  trajectories: Trajectory[];
}

/** Plays validation episodes with the model and measures format validity, action validity and success. */
export async function checkPolicy(
  model: Qwen2Model,
  tokenizer: Tokenizer,
  config: RunConfig,
  opts: PolicyCheckOptions,
): Promise<PolicyCheck> {
  const split = opts.split ?? 'val';
  let blocks = envBlocks(config, split);
  const episodes = opts.episodes ?? config.agent.valGroups;
  if (!Number.isInteger(episodes) || episodes < 1)
    throw new Error(`checkPolicy: episodes must be a positive integer, got ${episodes}`);
  // Spread the episodes over the blocks in proportion to their group counts (at least one each).
  const total = blocks.reduce((s, b) => s + b.nGroups, 0);
  blocks = blocks.map((b, i) => ({
    ...b,
    nGroups: i === blocks.length - 1 ? 0 : Math.max(1, Math.round((b.nGroups / total) * episodes)),
  }));
  const assigned = blocks.reduce((s, b) => s + b.nGroups, 0);
  blocks[blocks.length - 1].nGroups = Math.max(1, episodes - assigned);
  const envGroups = blocks.reduce((s, b) => s + b.nGroups, 0);

  const manager = new EnvGroupManager(
    {
      mode: 'val',
      envGroups,
      groupSize: 1,
      tags: blocks,
      baseSeed: config.agent.seedVal,
      formatPenalty: config.agent.formatPenalty,
    },
    envRegistry(),
  );
  let newTokens = 0;
  const generateFn = policyGenerateFn(model, tokenizer, {
    maxNewTokens: config.rollout.maxNewTokens,
    temperature: opts.temperature,
    seedForCall: (call) => mixSeed(opts.seed, call),
    onTokens: (n) => (newTokens += n),
  });
  const result = await runRollouts(manager, generateFn, agentFormatFromConfig(config));

  const rates = (trajectories: readonly Trajectory[]): CheckRates => {
    let turns = 0;
    let formatOk = 0;
    let validActions = 0;
    for (const t of trajectories) {
      const names = new Set(manager.entries[t.envId].env.actionNames.map((n) => n.toLowerCase()));
      for (const turn of t.turns) {
        turns++;
        if (!turn.formatOk) continue;
        formatOk++;
        if (turn.parsedActions.length > 0 && turn.parsedActions.every((a) => names.has(a.toLowerCase())))
          validActions++;
      }
    }
    return {
      formatRate: turns ? formatOk / turns : 0,
      validActionRate: turns ? validActions / turns : 0,
      success: trajectories.length ? trajectories.filter((t) => t.success).length / trajectories.length : 0,
      turns,
      episodes: trajectories.length,
    };
  };
  const perTag: Record<string, CheckRates> = {};
  for (const tag of new Set(result.trajectories.map((t) => t.tag))) {
    perTag[tag] = rates(result.trajectories.filter((t) => t.tag === tag));
  }
  const all = rates(result.trajectories);
  const reasoning = groundingMetrics(
    groundingTurnsOf(result.trajectories, (id) => manager.entries[id].env),
    opts.seed,
  );
  return {
    ...all,
    perTag,
    reasoning,
    meanResponseTokens: all.turns ? newTokens / all.turns : 0,
    trajectories: result.trajectories,
  };
}

// ---------------------------------------------------------------------------------------------------------------
// The whole pipeline

export type WarmStartPhase = 'demonstrations' | 'tokenizer' | 'sft' | 'save';

export interface WarmStartOptions {
  /** Override recipe fields (e.g. fewer steps in a test). */
  recipe?: Partial<WarmStartRecipe>;
  /** The run config to build for (default: the preset's), e.g. another model size or observation format. */
  config?: RunConfig;
  /** Called when a phase starts. */
  onPhase?: (phase: WarmStartPhase, detail: string) => void;
  /** Called after every SFT step. */
  onStep?: (step: number, steps: number, loss: number) => void;
  /** Called (and awaited) after every SFT step with the model being trained, e.g. to save intermediate checkpoints. */
  onModel?: (step: number, model: Qwen2Model, tokenizer: Tokenizer) => Promise<void>;
}

export interface WarmStartResult {
  preset: WarmStartPreset;
  recipe: WarmStartRecipe;
  config: RunConfig;
  model: Qwen2Model;
  tokenizer: Tokenizer;
  demonstrations: DemonstrationStats;
  /** The demonstrations of each later SFT cycle, in order (recipes with laterCycles). */
  laterCycleDemonstrations?: DemonstrationStats[];
  /** Longest demonstrated response in tokens (must fit rollout.maxNewTokens). */
  maxResponseTokens: number;
  /** Longest training sequence in tokens. */
  maxSequenceTokens: number;
  /** The loss of every SFT step, the cycles one after the other. */
  losses: number[];
  /** Mean loss over the last 10 % of the (last cycle's) steps (less noisy than the last step's). */
  finalLoss: number;
  sftSeconds: number;
}

/**
 * Builds a preset's warm start in memory: demonstrations, tokenizer, tiny model, SFT. The caller owns (and
 * disposes) `result.model`; `saveCheckpointDir(dir, result.model, result.tokenizer)` writes it.
 * Needs an initialised tfjs backend (initBackend).
 */
export async function buildWarmStart(preset: string, opts: WarmStartOptions = {}): Promise<WarmStartResult> {
  const name = warmStartRecipeName(preset);
  const recipe: WarmStartRecipe = { ...WARMSTART_RECIPES[name], ...opts.recipe };
  const config = opts.config ?? warmStartRunConfig(name);
  if (config.model.promptStyle !== 'compact')
    throw new Error(`warm start: preset '${name}' does not use the compact prompt`);
  if (!config.model.enableThink)
    throw new Error(`warm start: preset '${name}' disables <think>; the demonstrations always think`);
  const later = recipe.laterCycles ?? [];
  const seeds = [recipe.seed, ...later.map((cycle) => cycle.seed)];
  const repeated = seeds.find((seed, i) => seeds.indexOf(seed) !== i);
  if (repeated !== undefined) {
    throw new Error(
      `warm start: recipe '${name}': two cycles have seed ${repeated}; every cycle needs a seed of its own, or both see the same demonstrations`,
    );
  }

  opts.onPhase?.('demonstrations', `${recipe.episodes} episodes per training env block`);
  const demos = demonstrationsForRun(config, recipe);
  opts.onPhase?.('tokenizer', `byte-level BPE, ${recipe.vocabSize} ids`);
  const tokenizer = buildWarmStartTokenizer(demos, warmStartTags(config), recipe.vocabSize);
  const cycles: { demos: Demonstration[]; sft: SftOptions }[] = [
    {
      demos,
      sft: {
        steps: recipe.steps,
        batchSize: recipe.batchSize,
        lr: recipe.lr,
        warmupSteps: recipe.warmupSteps,
        seed: recipe.seed,
      },
    },
  ];
  for (const [i, cycle] of later.entries()) {
    opts.onPhase?.('demonstrations', `cycle ${i + 2}: ${cycle.episodes} episodes per training env block`);
    const cycleRecipe = {
      ...recipe,
      episodes: cycle.episodes,
      imperfectFraction: cycle.imperfectFraction,
      actionsPerAnswer: cycle.actionsPerAnswer ?? recipe.actionsPerAnswer,
      seed: cycle.seed,
    };
    cycles.push({
      demos: demonstrationsForRun(config, cycleRecipe),
      sft: {
        steps: cycle.steps,
        batchSize: recipe.batchSize,
        lr: cycle.lr,
        warmupSteps: cycle.warmupSteps,
        seed: cycle.seed,
      },
    });
  }
  const examples = cycles.map((cycle) =>
    cycle.demos.flatMap((d) => d.samples.map((sample) => tokenizeRendered(tokenizer, sample))),
  );
  const maxResponseTokens = Math.max(...cycles.map((cycle) => longestResponse(tokenizer, cycle.demos)));
  if (maxResponseTokens > config.rollout.maxNewTokens) {
    throw new Error(
      `warm start: a demonstrated response takes ${maxResponseTokens} tokens, more than rollout.maxNewTokens ` +
        `${config.rollout.maxNewTokens} of preset '${name}': shorten the reasoning templates or raise the limit`,
    );
  }

  const totalSteps = cycles.reduce((s, cycle) => s + cycle.sft.steps, 0);
  opts.onPhase?.('sft', `${cycles.map((cycle) => cycle.sft.steps).join(' + ')} steps, batch ${recipe.batchSize}`);
  const modelConfig = tinyQwen2Config(config.model.tiny, tokenizer.vocabSize);
  const model = new Qwen2Model(modelConfig, initQwen2Weights(modelConfig, recipe.seed));
  const start = Date.now();
  const losses: number[] = [];
  try {
    for (const [i, cycle] of cycles.entries()) {
      const before = losses.length; // steps are numbered across the cycles, 1 .. totalSteps
      losses.push(
        ...(await trainSft(model, examples[i], tokenizer.padTokenId!, {
          ...cycle.sft,
          gradClip: config.actor.gradClip,
          onStep: async (step, loss) => {
            opts.onStep?.(before + step, totalSteps, loss);
            await opts.onModel?.(before + step, model, tokenizer);
          },
        })),
      );
    }
  } catch (err) {
    model.dispose();
    throw err;
  }
  // The final loss is that of the last cycle's last 10 % of steps.
  const tail = losses.slice(-Math.max(1, Math.round(cycles[cycles.length - 1].sft.steps / 10)));
  return {
    preset: name,
    recipe,
    config,
    model,
    tokenizer,
    demonstrations: demonstrationStats(demos),
    ...(later.length > 0
      ? { laterCycleDemonstrations: cycles.slice(1).map((cycle) => demonstrationStats(cycle.demos)) }
      : {}),
    maxResponseTokens,
    maxSequenceTokens: Math.max(...examples.flat().map((e) => e.ids.length)),
    losses,
    finalLoss: tail.reduce((a, b) => a + b, 0) / tail.length,
    sftSeconds: (Date.now() - start) / 1000,
  };
}

/** The longest demonstrated response in tokens: the sampled continuation after the forced <think>, plus the stop token. */
function longestResponse(tokenizer: Tokenizer, demos: readonly Demonstration[]): number {
  let longest = 0;
  for (const d of demos) {
    for (const turn of d.turns)
      longest = Math.max(longest, tokenizer.encode(turn.response.slice('<think>'.length)).length + 1);
  }
  return longest;
}

/** Where a preset's warm start lives, relative to the repository root (the browser serves public/ at the root). */
export function warmStartDir(preset: string): string {
  return `public/warmstart/${warmStartRecipeName(preset)}`;
}
