// The Trainer's models and its checkpoint, in one place: how a run's actor, critic and reference model are built
// from where the run starts, and the whole layout of a trainer checkpoint. The Trainer (trainer.ts) keeps only the
// algorithm: it calls assembleTrainerModels once, trainerCheckpointFiles to save and restoreOptimizers to resume.
// Browser-safe (no Node module): a checkpoint is a map of file name -> bytes, which src/node/runDir.ts writes to
// checkpoints/step-N/ and the playground keeps in IndexedDB.
//
// Where a run starts (exactly one):
//   policyFiles   a Hugging Face Qwen2 checkpoint (a warm start, a local Qwen2.5): the initial actor;
//   model         an in-memory initial actor with its tokenizer (the Trainer takes ownership);
//   resumeFiles   a trainer checkpoint (below): the run continues after its last step.
// A fresh critic (PPO, advEstimator gae) is the actor's weights with a new value head (normal(0, 0.02) from the
// seeded generator of trainer.seed, 0 included; bias 0), as veRL's critic loads the actor checkpoint as a token
// classifier. The reference model (only built when a KL term is on) is a frozen copy of the initial actor.
//
// With LoRA (config.lora, src/model/lora.ts) the actor and the critic get fresh adapters (PEFT's init, seeded from
// trainer.seed) on top of the initial weights, which stay frozen; the reference is the actor with its adapters off
// (actor.baseModel(): no copy). A start from a checkpoint that has adapters starts from its policy as trained (the
// adapters folded into the weights); a resume keeps them and must be configured with the same LoRA settings.
//
// A trainer checkpoint, file by file:
//   config.json, model.safetensors,          the actor in Hugging Face Qwen2 format: the directory loads in
//   tokenizer.json, tokenizer_config.json    transformers as it is
//   critic/...                               the critic (PPO only), the same files, Qwen2ForTokenClassification
//   adapter/, critic/adapter/                LoRA only: the adapters in PEFT's format (the weights above are the base)
//   ref.safetensors                          the reference weights by HF name (only when a KL term is on, without LoRA)
//   optimizer.safetensors                    AdamW moments: actor.m.<weight>, actor.v.<weight>, critic.m.<weight>, ...
//   (any of the three safetensors sets past 2 GiB: Hugging Face's shards, <base>-00001-of-0000n.safetensors and
//   <base>.safetensors.index.json; a Qwen2.5-0.5B PPO run's optimizer state is 7.9 GB, in 2 GiB shards)
//   trainer_state.json                       TrainerState (below): counters, early stopping, echo trap, last validation
import * as tf from '@tensorflow/tfjs';
import type { CollapseState } from '../metrics/collapse';
import type { EchoTrapState } from '../metrics/echoTrap';
import { AdamW } from '../model/adamw';
import { LoraAdapters, type LoraSettings } from '../model/lora';
import {
  hasModelFiles,
  hasTensorFiles,
  loadPolicyFiles,
  readModelFiles,
  readTensorFiles,
  writeModelFiles,
  writeTensorFiles,
} from '../model/modelFiles';
import { Qwen2Model, splitStackedWeights, stackHfWeights, withHfWeights, type WeightMap } from '../model/qwen2';
import { mixSeed, seededNormal } from '../model/seeded';
import type { Tokenizer } from '../model/tokenizer';
import type { RunConfig } from './config';
import type { EarlyStopReason, EarlyStopState } from './earlyStop';

const STATE_FORMAT = 'ragen-ts-trainer/1';
const STATE_FILE = 'trainer_state.json';
// Bases of safetensors sets: <base>.safetensors, or shards + <base>.safetensors.index.json past 2 GiB (a
// qwen0.5b actor and critic's AdamW moments are 7.9 GB; safetensorsShards.ts).
const OPTIMIZER = 'optimizer';
const REF = 'ref';
const CRITIC_PREFIX = 'critic/';

/** Where a Trainer starts: exactly one of `policyFiles`, `model` + `tokenizer`, or `resumeFiles`. */
export interface TrainerSource {
  /** Files of a Hugging Face Qwen2 checkpoint (config.json, model.safetensors, tokenizer.json, ...): the initial actor. */
  policyFiles?: Record<string, Uint8Array>;
  /** An in-memory initial actor; the trainer takes ownership (disposes it). */
  model?: Qwen2Model;
  tokenizer?: Tokenizer;
  /** Files of a trainer checkpoint (`Trainer.checkpointFiles()`): continue that run after its last step. */
  resumeFiles?: Record<string, Uint8Array>;
}

/** The models a Trainer owns. */
export interface TrainerModels {
  actor: Qwen2Model;
  /** The value model (PPO / gae only). */
  critic: Qwen2Model | null;
  /** Frozen copy of the initial actor, when a KL term is on. */
  ref: Qwen2Model | null;
  tokenizer: Tokenizer;
}

/** The plain-JSON part of a trainer checkpoint (trainer_state.json). */
export interface TrainerState {
  format: typeof STATE_FORMAT;
  /** Completed training steps. */
  step: number;
  initialValidationDone: boolean;
  stoppedBy: EarlyStopReason | null;
  actorOptimizerSteps: number;
  criticOptimizerSteps: number;
  earlyStop: EarlyStopState;
  echoTrap: EchoTrapState;
  /** The collapse diagnostics' moving averages (absent in checkpoints written before they existed: start fresh). */
  collapse?: CollapseState;
  /** Base seed of the next training reset (informational: it is a function of the step, see trainSeedBase). */
  nextTrainSeed: number | null;
  /** The newest validation metrics, for progress displays after a resume. */
  lastValidation: Record<string, number>;
}

/** What the Trainer knows of its own progress; the optimizer step counts come from the optimizers. */
export type TrainerProgress = Omit<TrainerState, 'format' | 'actorOptimizerSteps' | 'criticOptimizerSteps'>;

/** True when a KL term needs the reference policy. */
export function usesReference(config: RunConfig): boolean {
  return (
    (config.algorithm.useKlInReward && config.algorithm.klCoef > 0) ||
    (config.actor.useKlLoss && config.actor.klLossCoef > 0)
  );
}

/**
 * Builds the actor, critic (PPO) and reference (KL) of a run from its source, and reads trainer_state.json when
 * resuming (null otherwise). Needs an initialised tfjs backend. On an error nothing is left allocated except the
 * caller's own `source.model`.
 */
export function assembleTrainerModels(
  config: RunConfig,
  source: TrainerSource,
): { models: TrainerModels; state: TrainerState | null } {
  const given = [source.policyFiles !== undefined, source.model !== undefined, source.resumeFiles !== undefined].filter(
    Boolean,
  ).length;
  if (given !== 1)
    throw new Error('Trainer.create: give exactly one of policyFiles, model (+ tokenizer) or resumeFiles');
  if (source.model && !source.tokenizer) throw new Error('Trainer.create: an in-memory model needs its tokenizer');
  const needRef = usesReference(config);
  const needCritic = config.algorithm.advEstimator === 'gae';
  const lora: LoraSettings | null = config.lora.enabled
    ? { rank: config.lora.rank, alpha: config.lora.alpha, targetModules: config.lora.targetModules }
    : null;
  const owned: Qwen2Model[] = [];
  try {
    let actor: Qwen2Model;
    let tokenizer: Tokenizer;
    let critic: Qwen2Model | null = null;
    let ref: Qwen2Model | null = null;
    let state: TrainerState | null = null;
    if (source.resumeFiles) {
      const files = source.resumeFiles;
      state = readTrainerState(files);
      ({ model: actor, tokenizer } = loadPolicyFiles(files));
      owned.push(actor);
      if (needCritic) {
        const criticFiles = prefixedFiles(files, CRITIC_PREFIX);
        if (!hasModelFiles(criticFiles))
          throw new Error(`Trainer: the checkpoint has no ${CRITIC_PREFIX}model.safetensors (critic) to resume PPO`);
        try {
          ({ model: critic } = readModelFiles(criticFiles, { valueHead: true }));
        } catch (err) {
          throw new Error(`${(err as Error).message} (the critic, under ${CRITIC_PREFIX})`, { cause: err });
        }
        owned.push(critic);
        checkResumedLora(critic, lora, 'critic');
      }
      checkResumedLora(actor, lora, 'actor');
      if (needRef && lora) {
        ref = actor.baseModel();
      } else if (needRef) {
        if (!hasTensorFiles(files, REF))
          throw new Error(`Trainer: the checkpoint has no ${REF}.safetensors, but this config uses a KL term`);
        ref = new Qwen2Model(actor.config, readTensorFiles(files, REF, 'trainer checkpoint'));
        owned.push(ref);
      }
    } else {
      if (source.policyFiles) {
        ({ model: actor, tokenizer } = loadPolicyFiles(source.policyFiles));
      } else {
        actor = source.model!;
        tokenizer = source.tokenizer!;
      }
      owned.push(actor);
      if (actor.hasValueHead) throw new Error('Trainer: the policy model has a value head, not an LM head');
      actor.mergeAdapters(); // a policy trained with LoRA starts as trained: its adapters folded into its weights
      if (needCritic) {
        const weights = cloneWeights(actor, (n) => n === 'lm_head.weight');
        weights['score.weight'] = valueHeadInit(actor.config.hidden_size, config.trainer.seed);
        weights['score.bias'] = tf.zeros([1]);
        critic = new Qwen2Model(actor.config, weights, { valueHead: true });
        owned.push(critic);
      }
      if (lora) {
        actor.addAdapters(LoraAdapters.init(actor.config, lora, mixSeed(config.trainer.seed, LORA_ACTOR_STREAM)));
        critic?.addAdapters(LoraAdapters.init(actor.config, lora, mixSeed(config.trainer.seed, LORA_CRITIC_STREAM)));
      }
      if (needRef && lora) {
        ref = actor.baseModel();
      } else if (needRef) {
        ref = new Qwen2Model(actor.config, cloneWeights(actor));
        owned.push(ref);
      }
    }
    if (tokenizer.vocabSize > actor.config.vocab_size) {
      throw new Error(
        `Trainer: the tokenizer has ${tokenizer.vocabSize} ids but the model's vocab_size is ${actor.config.vocab_size}`,
      );
    }
    return { models: { actor, critic, ref, tokenizer }, state };
  } catch (err) {
    for (const m of owned) if (m !== source.model) m.dispose();
    throw err;
  }
}

/** Throws unless a resumed model's adapters are what the config asks for (a run cannot switch LoRA on or off). */
function checkResumedLora(model: Qwen2Model, lora: LoraSettings | null, which: 'actor' | 'critic'): void {
  const has = model.lora?.settings ?? null;
  if (lora && !has)
    throw new Error(
      `Trainer: lora.enabled is true but the checkpoint's ${which} has no LoRA adapters (a full fine-tuning run)`,
    );
  if (!lora && has)
    throw new Error(
      `Trainer: the checkpoint's ${which} has LoRA adapters but lora.enabled is false (resume with --set lora.enabled=true)`,
    );
  if (lora && has) {
    const same =
      lora.rank === has.rank &&
      lora.alpha === has.alpha &&
      [...lora.targetModules].sort().join(',') === [...has.targetModules].sort().join(',');
    if (!same) {
      throw new Error(
        `Trainer: the checkpoint's ${which} adapters have rank ${has.rank}, alpha ${has.alpha}, targets ` +
          `${has.targetModules.join(',')}; the config asks for rank ${lora.rank}, alpha ${lora.alpha}, targets ${lora.targetModules.join(',')}`,
      );
    }
  }
}

/** Disposes the models, except `keep` (a caller's model the Trainer did not take over after all). */
export function disposeTrainerModels(models: TrainerModels, keep?: Qwen2Model): void {
  for (const m of [models.actor, models.critic, models.ref]) if (m && m !== keep) m.dispose();
}

/** The files of a trainer checkpoint (see the top of this file). */
export async function trainerCheckpointFiles(
  models: TrainerModels,
  optimizers: { actor: AdamW; critic: AdamW | null },
  progress: TrainerProgress,
): Promise<Record<string, Uint8Array>> {
  const files: Record<string, Uint8Array> = { ...(await writeModelFiles(models.actor, models.tokenizer)) };
  if (models.critic) {
    for (const [name, bytes] of Object.entries(await writeModelFiles(models.critic, models.tokenizer)))
      files[CRITIC_PREFIX + name] = bytes;
  }
  // Under LoRA the reference is the actor's base, already in model.safetensors.
  // Every file speaks HF's names (the reference's weights, the moments: actor.m.<HF name>), whatever the model's own
  // layout: the stacked q/k/v and gate/up are split here and stacked again by restoreOptimizers / the constructor.
  const config = models.actor.config;
  if (models.ref && !models.actor.lora) {
    Object.assign(files, await withHfWeights(config, models.ref.variables, (hf) => writeTensorFiles(hf, REF)));
  }
  const moments: Record<string, tf.Tensor> = {};
  const actorState = optimizers.actor.getState();
  const criticState = optimizers.critic?.getState();
  try {
    const hf = (m: Record<string, tf.Tensor>) => Object.entries(splitStackedWeights(config, m, { consume: true }));
    for (const [name, t] of hf(actorState.m)) moments[`actor.m.${name}`] = t;
    for (const [name, t] of hf(actorState.v)) moments[`actor.v.${name}`] = t;
    if (criticState) {
      for (const [name, t] of hf(criticState.m)) moments[`critic.m.${name}`] = t;
      for (const [name, t] of hf(criticState.v)) moments[`critic.v.${name}`] = t;
    }
    Object.assign(files, await writeTensorFiles(moments, OPTIMIZER));
  } finally {
    tf.dispose(Object.values(moments));
  }
  const state: TrainerState = {
    format: STATE_FORMAT,
    step: progress.step,
    initialValidationDone: progress.initialValidationDone,
    stoppedBy: progress.stoppedBy,
    actorOptimizerSteps: actorState.step,
    criticOptimizerSteps: criticState?.step ?? 0,
    earlyStop: progress.earlyStop,
    echoTrap: progress.echoTrap,
    collapse: progress.collapse,
    nextTrainSeed: progress.nextTrainSeed,
    lastValidation: finiteOnly(progress.lastValidation),
  };
  files[STATE_FILE] = new TextEncoder().encode(JSON.stringify(state, null, 2) + '\n');
  return files;
}

/** The AdamW of the actor and of the critic (PPO). With LoRA only the adapters (and the critic's value head) train:
 *  moments for those alone. */
export function trainerOptimizers(config: RunConfig, models: TrainerModels): { actor: AdamW; critic: AdamW | null } {
  const { actor: a, critic: c } = config;
  return {
    actor: new AdamW(models.actor.trainableVariables, { lr: a.lr, betas: a.betas, weightDecay: a.weightDecay }),
    critic: models.critic
      ? new AdamW(models.critic.trainableVariables, { lr: c.lr, betas: c.betas, weightDecay: c.weightDecay })
      : null,
  };
}

/** Puts the AdamW moments and step counts of a checkpoint back into the optimizers. */
export function restoreOptimizers(
  files: Record<string, Uint8Array>,
  state: TrainerState,
  optimizers: { actor: AdamW; critic: AdamW | null },
): void {
  const moments = readTensorFiles(files, OPTIMIZER, 'trainer checkpoint');
  try {
    // The file's moments are by HF name (whichever layout wrote them); the optimizers' follow the model's variables.
    const pick = (prefix: string) => {
      const out: Record<string, tf.Tensor> = {};
      for (const [name, t] of Object.entries(moments)) if (name.startsWith(prefix)) out[name.slice(prefix.length)] = t;
      const stacked = stackHfWeights(out);
      for (const [name, t] of Object.entries(stacked)) if (out[name] !== t) moments[`${prefix}${name}`] = t; // freed below
      return stacked;
    };
    optimizers.actor.setState({ step: state.actorOptimizerSteps, m: pick('actor.m.'), v: pick('actor.v.') });
    optimizers.critic?.setState({ step: state.criticOptimizerSteps, m: pick('critic.m.'), v: pick('critic.v.') });
  } finally {
    tf.dispose(Object.values(moments));
  }
}

/** The step a trainer checkpoint was taken at (reads trainer_state.json). */
export function checkpointStep(files: Record<string, Uint8Array>): number {
  return readTrainerState(files).step;
}

function readTrainerState(files: Record<string, Uint8Array>): TrainerState {
  const bytes = files[STATE_FILE];
  if (!bytes) throw new Error(`trainer checkpoint: ${STATE_FILE} is missing (not a checkpoint written by the trainer)`);
  let state: TrainerState;
  try {
    state = JSON.parse(new TextDecoder().decode(bytes)) as TrainerState;
  } catch (err) {
    throw new Error(`trainer checkpoint: ${STATE_FILE} is not valid JSON: ${(err as Error).message}`, { cause: err });
  }
  if (state.format !== STATE_FORMAT)
    throw new Error(
      `trainer checkpoint: ${STATE_FILE} has format ${JSON.stringify(state.format)}, expected "${STATE_FORMAT}"`,
    );
  if (!Number.isInteger(state.step) || state.step < 0)
    throw new Error(`trainer checkpoint: bad step ${state.step} in ${STATE_FILE}`);
  if (!hasTensorFiles(files, OPTIMIZER)) throw new Error(`trainer checkpoint: ${OPTIMIZER}.safetensors is missing`);
  return state;
}

/**
 * A fresh value head [1, hidden]: normal(0, 0.02) from the seeded JavaScript generator, so every seed, 0 included,
 * gives the same head on every backend (tf.randomNormal treats seed 0 as "no seed" and draws a new head each run).
 * Its stream is mixed with a constant so it never repeats the draws of a tiny model initialised from the same seed.
 */
function valueHeadInit(hidden: number, seed: number): tf.Tensor {
  const normal = seededNormal(mixSeed(seed, VALUE_HEAD_STREAM));
  return tf.tensor2d(
    Float32Array.from({ length: hidden }, () => 0.02 * normal()),
    [1, hidden],
  );
}

/** Names the value head's random stream (the bytes of "vhd0"), and the fresh LoRA adapters' ("lra0", "lrc0"). */
const VALUE_HEAD_STREAM = 0x76686430;
const LORA_ACTOR_STREAM = 0x6c726130;
const LORA_CRITIC_STREAM = 0x6c726330;

/** Copies of a model's weights by HF name. */
function cloneWeights(model: Qwen2Model, skip: (name: string) => boolean = () => false): WeightMap {
  return model.hfWeights(skip);
}

function prefixedFiles(files: Record<string, Uint8Array>, prefix: string): Record<string, Uint8Array> {
  const out: Record<string, Uint8Array> = {};
  for (const [name, bytes] of Object.entries(files))
    if (name.startsWith(prefix)) out[name.slice(prefix.length)] = bytes;
  return out;
}

function finiteOnly(m: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.entries(m).filter(([, v]) => Number.isFinite(v)));
}
