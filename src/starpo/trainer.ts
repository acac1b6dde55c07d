// The StarPO / StarPO-S Trainer: one RAGEN training step, top to bottom (spec §4.2), in the spirit of CleanRL's
// single-file algorithms. The Node CLI (`ragen train`) and the browser worker build the same Trainer from the same
// RunConfig; this file imports no Node module: metrics go to an injected MetricSink, checkpoints come and go as
// in-memory files (`checkpointFiles()` / `resumeFiles`), and the caller picks the tfjs backend (initBackend).
//
// One step:
//   1. rollout      P env groups x N rollouts through runRollouts, sampling with generate() (seeded: same seed +
//                   backend => same rollouts), stop at `</answer>` or `<|im_end|>`;
//   2. sequences    each trajectory's training rendering -> token ids + loss mask (batch.ts);
//   3. scores       total env reward + format penalty (on the last loss token, later), then RAGEN's optional
//                   reward normalisation per group (mean_std = GRPO, mean = Dr.GRPO);
//   4. filter       StarPO-S uncertainty filter on the RAW rewards (v1 ratio by default, v2 strategies by config);
//   5. old log-probs recomputed on the training sequences (never the sampler's: spec §10.4), reference
//                   log-probs when a KL term is on (ref = frozen copy of the initial actor), critic values (PPO);
//   6. advantages   PPO: terminal reward (minus reward-KL) -> GAE -> whitening; GRPO: broadcast normalised scores;
//   7. update       ppoEpochs x mini-batches of ppoMiniBatchSize trajectories, each accumulated over micro-batches:
//                   critic (clipped value loss) then actor (clipped surrogate - entropy bonus [+ KL loss]), global
//                   grad-norm clipping and AdamW. A non-finite loss or grad norm skips that optimizer step (logged as
//                   `actor/nan_skipped` / `critic/nan_skipped`), so it never reaches the weights;
//   8. validation   every testFreq steps and on the last step (and once before training: the row of step 0), on the
//                   fixed val env groups (seeds from seedVal = 123) at valTemperature 0.5;
//   9. metrics      RAGEN's keys into the sink, plus reasoning diversity, the echo-trap detector and early stopping.
//
// Validation metrics (`val-env/<Tag>/...`) appear only in the rows of steps that validated (RAGEN/W&B logs them
// the same way); other rows simply do not carry those keys. Step 0 holds the validation before training.
//
// What differs from RAGEN, on purpose: the reference model is only built when a KL term is on (RAGEN also computes
// it just to log `rollout/ref_log_prob`); mini-batches are taken in order, as veRL with shuffle off.
import * as tf from '@tensorflow/tfjs';
import { EnvGroupManager, envRegistry, runRollouts, summarizeEnvMetrics, type GenerateFn, type Trajectory } from '../agent/index';
import { AdamW, clipGradNormAsync } from '../model/adamw';
import { checkpointFiles, loadCheckpointFiles } from '../model/checkpoint';
import { Qwen2Model, type WeightMap } from '../model/qwen2';
import { indexSafetensors, serializeSafetensors } from '../model/safetensors';
import { seededUniform } from '../model/sampling';
import { namedVariableGrads, tokenLogProbs } from '../model/scoring';
import type { Tokenizer } from '../model/tokenizer';
import { EchoTrapDetector, type EchoTrapState } from '../metrics/echoTrap';
import { reasoningMetrics, reasoningSamplesFromTrajectories } from '../metrics/reasoning';
import type { MetricSink } from '../metrics/sink';
import {
  applyKlInReward,
  klLoss,
} from './kl';
import { broadcastOverLossTokens, gae, grpoNormalize, placeTerminalReward, whiten } from './advantages';
import { chunks, disposeBatch, lossTokenCount, padBatch, padRows, tokenizeTrajectory, unpadRows, type TokenizedTrajectory } from './batch';
import { envBlocks, type RunConfig } from './config';
import { EarlyStopper, type EarlyStopReason, type EarlyStopState } from './earlyStop';
import { filterGroupsV1, filterGroupsV2, filterLossScale, type FilterResult } from './filter';
import { mixSeed, policyGenerateFn } from './policyAgent';
import { actorLoss, entropyLoss, policyLoss, valueLoss } from './losses';

/**
 * Where a step is, for progress displays: 'validation' (the fixed val env groups, before the first step and every
 * testFreq steps), 'rollout' (tokens generated of the step's budget), 'scoring' (old / reference log-probs and
 * critic values, one count per pass), 'update' (optimizer steps over the PPO epochs x mini-batches).
 */
export type StepPhase = 'validation' | 'rollout' | 'scoring' | 'update';

/** How a Trainer starts: exactly one of `policyFiles`, `model` + `tokenizer`, or `resumeFiles`. */
export interface TrainerOptions {
  /** Files of a Hugging Face Qwen2 checkpoint (config.json, model.safetensors, tokenizer.json, ...): the initial actor. */
  policyFiles?: Record<string, Uint8Array>;
  /** An in-memory initial actor; the trainer takes ownership (disposes it). */
  model?: Qwen2Model;
  tokenizer?: Tokenizer;
  /** Files of a trainer checkpoint (`checkpointFiles()`): continue that run after its last step. */
  resumeFiles?: Record<string, Uint8Array>;
  /** Where each step's metrics row and sample trajectories go. */
  sink: MetricSink;
  /** Human-readable progress lines (skipped updates, early stopping). */
  log?: (line: string) => void;
  /**
   * Test / debugging hook: sees every actor or critic loss before it is differentiated and may replace it (e.g.
   * multiply by NaN to check that a poisoned update is skipped). Not part of a normal run.
   */
  lossHook?: (kind: 'actor' | 'critic', step: number, loss: tf.Scalar) => tf.Scalar;
  /**
   * Progress inside a step (`done` of `total` in `phase`), called often (every generated token). Awaited, and a
   * throw from it abandons the step: while `canAbandonStep` is true nothing of the step has been kept, so the
   * Trainer is exactly as before the call and running the step again gives the same result (the browser's Stop).
   */
  onProgress?: (phase: StepPhase, done: number, total: number) => void | Promise<void>;
}

/** What one call of `step()` did. */
export interface StepResult {
  step: number;
  metrics: Record<string, number>;
  /** True when this step validated (its metrics carry `val-env/...`). */
  validated: boolean;
  /** Set when early stopping ended the run at this step. */
  stoppedBy: EarlyStopReason | null;
}

/** The plain-JSON part of a trainer checkpoint (trainer_state.json). */
interface TrainerState {
  format: typeof STATE_FORMAT;
  /** Completed training steps. */
  step: number;
  initialValidationDone: boolean;
  stoppedBy: EarlyStopReason | null;
  actorOptimizerSteps: number;
  criticOptimizerSteps: number;
  earlyStop: EarlyStopState;
  echoTrap: EchoTrapState;
  /** Base seed of the next training reset (informational: it is a function of the step, see trainSeedBase). */
  nextTrainSeed: number | null;
  /** The newest validation metrics, for progress displays after a resume. */
  lastValidation: Record<string, number>;
}

const STATE_FORMAT = 'ragen-ts-trainer/1';
const STATE_FILE = 'trainer_state.json';
const OPTIMIZER_FILE = 'optimizer.safetensors';
const REF_FILE = 'ref.safetensors';
const CRITIC_PREFIX = 'critic/';

const now = () => (typeof performance !== 'undefined' ? performance.now() : Date.now()) / 1000;
const mean = (xs: readonly number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : NaN);

function cloneWeights(model: Qwen2Model, skip: (name: string) => boolean = () => false): WeightMap {
  const out: WeightMap = {};
  for (const [name, v] of Object.entries(model.variables)) if (!skip(name)) out[name] = v.clone();
  return out;
}

export class Trainer {
  readonly config: RunConfig;
  readonly tokenizer: Tokenizer;
  readonly actor: Qwen2Model;
  /** The value model (PPO / gae only). */
  readonly critic: Qwen2Model | null;
  /** Frozen copy of the initial actor, when a KL term is on. */
  readonly ref: Qwen2Model | null;
  private readonly actorOptim: AdamW;
  private readonly criticOptim: AdamW | null;
  private readonly trainManager: EnvGroupManager;
  private readonly valManager: EnvGroupManager;
  private readonly sink: MetricSink;
  private readonly log: (line: string) => void;
  private readonly lossHook: TrainerOptions['lossHook'];
  private readonly onProgress: TrainerOptions['onProgress'];
  /** Set once the step in flight has changed something (weights, counters, the sink): it can no longer be abandoned. */
  private stepKeptSomething = false;
  private readonly padId: number;
  private readonly stopper: EarlyStopper;
  private readonly echoTrap: EchoTrapDetector;
  private stepCount = 0;
  private initialValidationDone = false;
  private stopped: EarlyStopReason | null = null;
  private lastValidation: Record<string, number> = {};
  private disposed = false;

  private constructor(
    config: RunConfig,
    parts: {
      actor: Qwen2Model;
      critic: Qwen2Model | null;
      ref: Qwen2Model | null;
      tokenizer: Tokenizer;
      stopper: EarlyStopper;
      echoTrap: EchoTrapDetector;
    },
    opts: TrainerOptions,
  ) {
    this.config = config;
    this.actor = parts.actor;
    this.critic = parts.critic;
    this.ref = parts.ref;
    this.tokenizer = parts.tokenizer;
    this.stopper = parts.stopper;
    this.echoTrap = parts.echoTrap;
    this.sink = opts.sink;
    this.log = opts.log ?? (() => {});
    this.lossHook = opts.lossHook;
    this.onProgress = opts.onProgress;
    const imEnd = parts.tokenizer.tokenId('<|im_end|>');
    const pad = parts.tokenizer.padTokenId;
    if (imEnd === undefined) throw new Error('Trainer: the tokenizer has no <|im_end|> token (the chat template needs it)');
    if (pad === undefined) throw new Error('Trainer: the tokenizer has no pad token (tokenizer_config.json pad_token)');
    this.padId = pad;
    const a = config.actor;
    this.actorOptim = new AdamW(this.actor.variables, { lr: a.lr, betas: a.betas, weightDecay: a.weightDecay });
    this.criticOptim = this.critic
      ? new AdamW(this.critic.variables, { lr: config.critic.lr, betas: config.critic.betas, weightDecay: config.critic.weightDecay })
      : null;
    const registry = envRegistry({ responseLength: config.rollout.maxNewTokens });
    this.trainManager = new EnvGroupManager(
      {
        mode: 'train',
        envGroups: config.agent.envGroups,
        groupSize: config.agent.groupSize,
        tags: envBlocks(config, 'train'),
        baseSeed: config.agent.seedTrain,
        formatPenalty: config.agent.formatPenalty,
      },
      registry,
    );
    this.valManager = new EnvGroupManager(
      {
        mode: 'val',
        envGroups: config.agent.valGroups,
        groupSize: config.agent.valGroupSize,
        tags: envBlocks(config, 'val'),
        baseSeed: config.agent.seedVal,
        formatPenalty: config.agent.formatPenalty,
      },
      registry,
    );
  }

  /** True when a KL term needs the reference policy. */
  static usesReference(config: RunConfig): boolean {
    return (config.algorithm.useKlInReward && config.algorithm.klCoef > 0) || (config.actor.useKlLoss && config.actor.klLossCoef > 0);
  }

  /**
   * Builds a trainer. Needs an initialised tfjs backend. The critic (PPO) starts from the actor's weights with a
   * fresh value head (normal(0, 0.02) seeded by trainer.seed, bias 0), as veRL's critic loads the actor checkpoint
   * as a token classifier.
   */
  static async create(config: RunConfig, opts: TrainerOptions): Promise<Trainer> {
    const sources = [opts.policyFiles !== undefined, opts.model !== undefined, opts.resumeFiles !== undefined].filter(Boolean).length;
    if (sources !== 1) throw new Error('Trainer.create: give exactly one of policyFiles, model (+ tokenizer) or resumeFiles');
    if (opts.model && !opts.tokenizer) throw new Error('Trainer.create: an in-memory model needs its tokenizer');
    const needRef = Trainer.usesReference(config);
    const needCritic = config.algorithm.advEstimator === 'gae';
    const owned: Qwen2Model[] = [];
    try {
      let actor: Qwen2Model;
      let tokenizer: Tokenizer;
      let critic: Qwen2Model | null = null;
      let ref: Qwen2Model | null = null;
      let state: TrainerState | null = null;
      if (opts.resumeFiles) {
        const files = opts.resumeFiles;
        state = readState(files);
        const loaded = loadCheckpointFiles(topLevelFiles(files));
        actor = new Qwen2Model(loaded.config, loaded.weights);
        owned.push(actor);
        tokenizer = loaded.tokenizer;
        if (needCritic) {
          const criticFiles = prefixedFiles(files, CRITIC_PREFIX);
          if (!criticFiles['model.safetensors']) throw new Error(`Trainer: the checkpoint has no ${CRITIC_PREFIX}model.safetensors (critic) to resume PPO`);
          const c = loadCheckpointFiles(criticFiles);
          critic = new Qwen2Model(c.config, c.weights, { valueHead: true });
          owned.push(critic);
        }
        if (needRef) {
          if (!files[REF_FILE]) throw new Error(`Trainer: the checkpoint has no ${REF_FILE}, but this config uses a KL term`);
          ref = new Qwen2Model(loaded.config, readTensors(files[REF_FILE], REF_FILE, ''));
          owned.push(ref);
        }
      } else {
        if (opts.policyFiles) {
          const loaded = loadCheckpointFiles(opts.policyFiles);
          if (loaded.valueHead) {
            Object.values(loaded.weights).forEach((t) => t.dispose());
            throw new Error('Trainer: the policy checkpoint is a critic (value head), not a causal language model');
          }
          actor = new Qwen2Model(loaded.config, loaded.weights);
          tokenizer = loaded.tokenizer;
        } else {
          actor = opts.model!;
          tokenizer = opts.tokenizer!;
        }
        owned.push(actor);
        if (actor.hasValueHead) throw new Error('Trainer: the policy model has a value head, not an LM head');
        if (needCritic) {
          const weights = cloneWeights(actor, (n) => n === 'lm_head.weight');
          weights['score.weight'] = tf.randomNormal([1, actor.config.hidden_size], 0, 0.02, 'float32', config.trainer.seed);
          weights['score.bias'] = tf.zeros([1]);
          critic = new Qwen2Model(actor.config, weights, { valueHead: true });
          owned.push(critic);
        }
        if (needRef) {
          ref = new Qwen2Model(actor.config, cloneWeights(actor));
          owned.push(ref);
        }
      }
      if (tokenizer.vocabSize > actor.config.vocab_size) {
        throw new Error(`Trainer: the tokenizer has ${tokenizer.vocabSize} ids but the model's vocab_size is ${actor.config.vocab_size}`);
      }
      const stopper = state ? EarlyStopper.fromState(state.earlyStop) : new EarlyStopper(config.earlyStop);
      const echoTrap = state ? EchoTrapDetector.fromState(state.echoTrap) : new EchoTrapDetector(config.echoTrap);
      const trainer = new Trainer(config, { actor, critic, ref, tokenizer, stopper, echoTrap }, opts);
      if (state && opts.resumeFiles) trainer.restore(state, opts.resumeFiles);
      return trainer;
    } catch (err) {
      for (const m of owned) if (m !== opts.model) m.dispose();
      throw err;
    }
  }

  /** Completed training steps. */
  get stepsDone(): number {
    return this.stepCount;
  }

  /** The early-stopping rule that ended the run, or null. */
  get stoppedBy(): EarlyStopReason | null {
    return this.stopped;
  }

  /** True when every configured step ran or early stopping fired. */
  get finished(): boolean {
    return this.stepCount >= this.config.trainer.totalSteps || this.stopped !== null;
  }

  /** The newest validation metrics (`val-env/...`), or {} before the first validation. */
  get latestValidation(): Record<string, number> {
    return { ...this.lastValidation };
  }

  /** Whether the caller should write a checkpoint after `step` (every saveFreq steps; the final one is the caller's). */
  shouldCheckpoint(step: number): boolean {
    const f = this.config.trainer.saveFreq;
    return f > 0 && step % f === 0;
  }

  // -------------------------------------------------------------------------------------------------------------
  // One training step

  /**
   * True until the step in flight changes anything (its first optimizer step): a throw from `onProgress` before then
   * leaves the Trainer as it was before `step()`.
   */
  get canAbandonStep(): boolean {
    return !this.stepKeptSomething;
  }

  private async progress(phase: StepPhase, done: number, total: number): Promise<void> {
    if (this.onProgress) await this.onProgress(phase, done, total);
  }

  async step(): Promise<StepResult> {
    this.checkAlive();
    this.stepKeptSomething = false;
    if (this.finished) throw new Error(`Trainer.step: the run is finished (${this.stopped ? `early stop: ${this.stopped}` : `${this.stepCount} steps done`})`);
    const c = this.config;
    if (this.stepCount === 0 && c.trainer.valBeforeTrain && !this.initialValidationDone) {
      const val = await this.validate(0);
      await this.sink.write(0, val);
      this.initialValidationDone = true;
    }
    const step = this.stepCount + 1;
    const stepStart = now();
    const metrics: Record<string, number> = {};

    // 1. Rollout.
    let t = now();
    const rollout = await runRollouts(this.trainManager, this.generateFn('train', step, c.rollout.temperature), {
      ...this.rolloutOptions(this.trainSeedBase(step)),
      onProgress: (done, total) => this.progress('rollout', done, total),
    });
    metrics['timing_s/gen'] = now() - t;
    const trajectories = rollout.trajectories;
    Object.assign(metrics, summarizeEnvMetrics(trajectories, 'train'));

    // 2. Training sequences.
    const sequences = trajectories.map((traj) => {
      if (!traj.training) throw new Error(`Trainer: trajectory ${traj.envId} played no turn`);
      return tokenizeTrajectory(this.tokenizer, traj.training);
    });

    // 3. Scores: env reward + format penalty, then optional group normalisation (RAGEN's context manager).
    const rawRewards = trajectories.map((x) => x.totalReward);
    const scores = this.normalizeScores(trajectories);

    // 4. Uncertainty filter (on raw rewards; entropy / length metrics for RAGEN-2's variants).
    const filter = await this.filterGroups(rawRewards, sequences);
    Object.assign(metrics, filter.metrics);
    const kept = filter.keptTrajectories;
    metrics['train/batch_size'] = kept.length;
    metrics['critic/score/mean'] = mean(kept.map((i) => scores[i]));

    // 5-7. Advantages and the update (skipped when the filter kept nothing).
    if (kept.length > 0) {
      const keptSeqs = kept.map((i) => sequences[i]);
      const lossTokens = keptSeqs.map(lossTokenCount);
      metrics['response_length/mean'] = mean(lossTokens);
      metrics['response_length/max'] = Math.max(...lossTokens);
      const realTokens = keptSeqs.reduce((s, x) => s + x.ids.length, 0);
      metrics['perf/total_num_tokens'] = realTokens;
      Object.assign(metrics, await this.update(step, keptSeqs, kept.map((i) => scores[i]), filter));
    } else {
      for (const k of ['response_length/mean', 'actor/pg_loss', 'actor/pg_clipfrac', 'actor/ppo_kl', 'actor/entropy_loss', 'actor/grad_norm']) metrics[k] = NaN;
      if (this.critic) metrics['critic/vf_loss'] = NaN;
      metrics['perf/total_num_tokens'] = 0;
      this.log(`step ${step}: the filter kept no env group; no update`);
    }

    // Reasoning: length in tokens, diversity, input dependence.
    Object.assign(
      metrics,
      reasoningMetrics(reasoningSamplesFromTrajectories(trajectories), { countTokens: (text) => this.tokenizer.encode(text).length }),
    );
    this.stepKeptSomething = true; // (also when the filter kept nothing and no update ran)
    await this.writeSampleRollouts(step, 'train', trajectories);
    this.stepCount = step;

    // 8. Validation.
    const validated = c.trainer.testFreq > 0 && (step % c.trainer.testFreq === 0 || step === c.trainer.totalSteps);
    if (validated) Object.assign(metrics, await this.validate(step));

    // 9. Collapse indicators and early stopping.
    metrics['timing_s/step'] = now() - stepStart;
    metrics['perf/throughput'] = metrics['perf/total_num_tokens'] / metrics['timing_s/step'];
    Object.assign(metrics, this.echoTrap.update(step, metrics));
    const decision = this.stopper.observeStep({
      emptyAfterFilter: kept.length === 0,
      inGroupRewardStd: metrics['rollout/in_group_reward_std'] ?? metrics['rollout/in_group_std'],
    });
    if (decision.stop && !this.stopped) {
      this.stopped = decision.reason ?? null;
      this.log(`early stop at step ${step}: ${decision.detail}`);
    }
    if (this.stopped) Object.assign(metrics, this.stopper.metrics());
    await this.sink.write(step, metrics);
    return { step, metrics: { step, ...metrics }, validated, stoppedBy: this.stopped };
  }

  // -------------------------------------------------------------------------------------------------------------
  // Rollouts

  private rolloutOptions(seed: number) {
    const c = this.config;
    return {
      maxTurn: c.agent.maxTurn,
      maxActionsPerTurn: c.agent.maxActionsPerTurn,
      enableThink: c.model.enableThink,
      actionSep: c.agent.actionSep,
      promptStyle: c.model.promptStyle,
      maxContextWindow: c.agent.maxContextWindow,
      responseMaskOnly: c.algorithm.responseMaskOnly,
      seed,
    };
  }

  /**
   * Base env seed of training step `step` (1-based): RAGEN's seedTrain + envGroups x (step - 1), a function of the
   * step alone, so a resumed run sees the same envs as an uninterrupted one. With seedTrain null (RAGEN: random per
   * reset) the base is drawn from a generator seeded by trainer.seed and the step.
   */
  private trainSeedBase(step: number): number {
    const c = this.config;
    if (c.agent.seedTrain !== null) return c.agent.seedTrain + c.agent.envGroups * (step - 1);
    return Math.floor(seededUniform(mixSeed(c.trainer.seed, step, 0x5eed))() * 1_000_001);
  }

  /** The policy as runRollouts sees it: sampling seeded by (trainer seed, split, step, call). */
  private generateFn(split: 'train' | 'val', step: number, temperature: number): GenerateFn {
    const c = this.config;
    return policyGenerateFn(this.actor, this.tokenizer, {
      maxNewTokens: c.rollout.maxNewTokens,
      temperature,
      topP: c.rollout.topP,
      topK: c.rollout.topK,
      seedForCall: (call) => mixSeed(c.trainer.seed, split === 'train' ? 1 : 2, step, call),
    });
  }

  /** Validation on the fixed val env groups; returns the `val-env/...` metrics and `timing_s/testing`. */
  async validate(step: number): Promise<Record<string, number>> {
    this.checkAlive();
    const c = this.config;
    const start = now();
    const temperature = c.rollout.valDoSample ? c.rollout.valTemperature : 0;
    const result = await runRollouts(this.valManager, this.generateFn('val', step, temperature), {
      ...this.rolloutOptions(c.agent.seedVal),
      onProgress: (done, total) => this.progress('validation', done, total),
    });
    const metrics = summarizeEnvMetrics(result.trajectories, 'val-env');
    metrics['timing_s/testing'] = now() - start;
    const successByTag: Record<string, number> = {};
    for (const [key, value] of Object.entries(metrics)) {
      const m = /^val-env\/([^/]+)\/success$/.exec(key);
      if (m) successByTag[m[1]] = value;
    }
    const decision = this.stopper.observeValidation(successByTag);
    if (decision.stop && !this.stopped) {
      this.stopped = decision.reason ?? null;
      this.log(`early stop at step ${step}: ${decision.detail}`);
    }
    await this.writeSampleRollouts(step, 'val', result.trajectories);
    this.lastValidation = { ...metrics };
    return metrics;
  }

  /** A few trajectories per step (one per env group, in group order) with their think / answer text per turn. */
  private async writeSampleRollouts(step: number, split: 'train' | 'val', trajectories: readonly Trajectory[]): Promise<void> {
    const n = this.config.trainer.logRollouts;
    if (n === 0 || !this.sink.writeRollouts) return;
    const groupSize = split === 'train' ? this.config.agent.groupSize : this.config.agent.valGroupSize;
    const picked: Trajectory[] = [];
    for (let i = 0; i < trajectories.length && picked.length < n; i += groupSize) picked.push(trajectories[i]);
    await this.sink.writeRollouts(
      step,
      picked.map((x) => ({
        split,
        envId: x.envId,
        groupId: x.groupId,
        tag: x.tag,
        seed: x.status.seed,
        success: x.success,
        reward: x.totalReward,
        score: x.score,
        turns: x.turns.map((turn) => ({
          turn: turn.turn,
          state: turn.state,
          think: turn.think,
          answer: turn.answer,
          formatOk: turn.formatOk,
          actions: turn.executedActions,
          reward: turn.reward,
        })),
        // The state after the last turn (a solved board, a fall into a hole), for the rollout viewer.
        finalState: x.history[x.history.length - 1]?.state ?? null,
      })),
    );
  }

  // -------------------------------------------------------------------------------------------------------------
  // Scores and filtering

  /** RAGEN's reward normalisation (spec §4.3): penalty first, then per group (state / tag / batch). */
  private normalizeScores(trajectories: readonly Trajectory[]): number[] {
    const { method, grouping } = this.config.algorithm.rewardNormalization;
    const scores = trajectories.map((x) => x.score);
    if (method === 'identity') return scores;
    const ids = trajectories.map((x) => (grouping === 'state' ? x.groupId : grouping === 'inductive' ? x.tag : 0));
    return grpoNormalize(scores, ids, method);
  }

  private async filterGroups(rawRewards: number[], sequences: readonly TokenizedTrajectory[]): Promise<FilterResult> {
    const c = this.config;
    const { envGroups, groupSize } = c.agent;
    const f = c.filter;
    if (f.strategy === 'ratio') return filterGroupsV1(rawRewards, envGroups, groupSize, { ratio: f.ratio, type: f.type });
    let values = rawRewards;
    if (f.metric === 'length') values = sequences.map(lossTokenCount);
    if (f.metric === 'entropy' || f.metric === 'entropy_variance') {
      const all = sequences.map((_, i) => i);
      const { entropyMeans } = await this.scoreActor(sequences, all);
      values = entropyMeans;
    }
    return filterGroupsV2(values, envGroups, groupSize, {
      strategy: f.strategy,
      value: f.value,
      type: f.type === 'std' ? 'largest' : 'smallest',
      includeZero: f.includeZero,
      topPProbMode: f.topPProbMode,
      selectionEps: f.selectionEps,
      metric: f.metric,
    });
  }

  // -------------------------------------------------------------------------------------------------------------
  // Scoring without gradients (old log-probs, reference log-probs, values)

  /**
   * Log-probs (and mean loss-token entropy) of the actor on `indices`, in the same micro-batches the update uses,
   * so the first update of a step sees exactly ratio 1 (identical shapes, identical arithmetic).
   */
  private async scoreActor(seqs: readonly TokenizedTrajectory[], indices: readonly number[], model: Qwen2Model = this.actor):
      Promise<{ logProbs: Float32Array[]; entropyMeans: number[] }> {
    const logProbs: Float32Array[] = [];
    const entropyMeans: number[] = [];
    for (const part of chunks(indices, this.config.actor.ppoMicroBatchSize)) {
      const items = part.map((i) => seqs[i]);
      const batch = padBatch(items, this.padId);
      const lengths = items.map((x) => x.ids.length - 1);
      const out = tf.tidy(() => tokenLogProbs(model, batch.ids, batch.attention));
      try {
        logProbs.push(...(await unpadRows(out.logProbs, lengths)));
        const ent = await unpadRows(out.entropy, lengths);
        ent.forEach((row, r) => {
          const mask = items[r].lossMask;
          let s = 0, n = 0;
          for (let j = 0; j < row.length; j++) if (mask[j]) { s += row[j]; n++; }
          entropyMeans.push(n ? s / n : 0);
        });
      } finally {
        tf.dispose([out.logProbs, out.entropy]);
        disposeBatch(batch);
      }
    }
    return { logProbs, entropyMeans };
  }

  /** Critic values V(prefix up to t) for every target position t, zero outside the loss mask (as veRL). */
  private async scoreCritic(seqs: readonly TokenizedTrajectory[]): Promise<Float32Array[]> {
    const critic = this.critic!;
    const values: Float32Array[] = [];
    for (const part of chunks(seqs.map((_, i) => i), this.config.actor.ppoMicroBatchSize)) {
      const items = part.map((i) => seqs[i]);
      const batch = padBatch(items, this.padId);
      const out = tf.tidy(() => {
        const v = critic.forward(batch.ids, batch.attention) as tf.Tensor2D;
        return v.slice([0, 0], [items.length, batch.length - 1]);
      });
      try {
        const rows = await unpadRows(out, items.map((x) => x.ids.length - 1));
        rows.forEach((row, r) => {
          for (let j = 0; j < row.length; j++) if (!items[r].lossMask[j]) row[j] = 0;
        });
        values.push(...rows);
      } finally {
        out.dispose();
        disposeBatch(batch);
      }
    }
    return values;
  }

  // -------------------------------------------------------------------------------------------------------------
  // Advantages and the PPO update

  private async update(step: number, seqs: TokenizedTrajectory[], scores: number[], filter: FilterResult): Promise<Record<string, number>> {
    const c = this.config;
    const metrics: Record<string, number> = {};
    const masks = seqs.map((s) => s.lossMask);
    const all = seqs.map((_, i) => i);
    const scoringPasses = 1 + (this.ref ? 1 : 0) + (c.algorithm.advEstimator === 'gae' ? 1 : 0);
    let scored = 0;

    let t = now();
    await this.progress('scoring', scored, scoringPasses);
    const { logProbs: oldLogProbs, entropyMeans } = await this.scoreActor(seqs, all);
    await this.progress('scoring', ++scored, scoringPasses);
    metrics['rollout/old_log_prob'] = maskedRowMean(oldLogProbs, masks);
    metrics['rollout/old_entropy'] = mean(entropyMeans);
    metrics['timing_s/old_log_prob'] = now() - t;
    let refLogProbs: Float32Array[] | null = null;
    if (this.ref) {
      t = now();
      refLogProbs = (await this.scoreActor(seqs, all, this.ref)).logProbs;
      await this.progress('scoring', ++scored, scoringPasses);
      metrics['rollout/ref_log_prob'] = maskedRowMean(refLogProbs, masks);
      metrics['timing_s/ref'] = now() - t;
    }

    // Advantages.
    t = now();
    let advantages: Float32Array[];
    let returns: Float32Array[] | null = null;
    let oldValues: Float32Array[] | null = null;
    if (c.algorithm.advEstimator === 'gae') {
      oldValues = await this.scoreCritic(seqs);
      await this.progress('scoring', ++scored, scoringPasses);
      let rewards = placeTerminalReward(scores, masks);
      if (c.algorithm.useKlInReward && refLogProbs) {
        const withKl = applyKlInReward(rewards, oldLogProbs, refLogProbs, masks, c.algorithm.klCoef, c.algorithm.klEstimator);
        rewards = withKl.rewards;
        Object.assign(metrics, withKl.metrics);
      }
      const g = gae(rewards, oldValues, masks, c.algorithm.gamma, c.algorithm.lambda);
      advantages = whiten(g.advantages, masks);
      returns = g.returns;
      metrics['critic/values/mean'] = maskedRowMean(oldValues, masks);
      metrics['critic/returns/mean'] = maskedRowMean(returns, masks);
    } else {
      advantages = broadcastOverLossTokens(scores, masks, c.algorithm.grpoLengthWeight);
    }
    if (c.filter.strategy !== 'ratio' && c.filter.lossScaling !== 'none') {
      const factor = filterLossScale(c.filter.lossScaling, filter.keptGroups.length / c.agent.envGroups);
      advantages = advantages.map((row) => row.map((a) => a * factor));
    }
    metrics['critic/advantages/mean'] = maskedRowMean(advantages, masks);
    metrics['timing_s/adv'] = now() - t;

    // PPO epochs x mini-batches, in order (veRL with shuffle off); critic first, then actor, as veRL.
    const miniBatches = chunks(all, c.actor.ppoMiniBatchSize);
    metrics['train/num_mini_batches'] = miniBatches.length * c.actor.ppoEpochs;
    const actorStats: Record<string, number[]> = {};
    const criticStats: Record<string, number[]> = {};
    let actorSkipped = 0;
    let criticSkipped = 0;
    let actorTime = 0;
    let criticTime = 0;
    const optimizerSteps = miniBatches.length * c.actor.ppoEpochs * (this.critic ? 2 : 1);
    let stepped = 0;
    await this.progress('update', stepped, optimizerSteps);
    this.stepKeptSomething = true; // from here on the weights change
    for (let epoch = 0; epoch < c.actor.ppoEpochs; epoch++) {
      for (const mini of miniBatches) {
        if (this.critic && returns && oldValues) {
          t = now();
          const r = await this.criticMiniBatch(step, seqs, mini, oldValues, returns);
          if (!r.applied) criticSkipped++;
          pushStats(criticStats, r.stats);
          criticTime += now() - t;
          await this.progress('update', ++stepped, optimizerSteps);
        }
        t = now();
        const r = await this.actorMiniBatch(step, seqs, mini, oldLogProbs, advantages, refLogProbs);
        if (!r.applied) actorSkipped++;
        pushStats(actorStats, r.stats);
        actorTime += now() - t;
        await this.progress('update', ++stepped, optimizerSteps);
      }
    }
    for (const [k, v] of Object.entries(actorStats)) metrics[k] = mean(v);
    for (const [k, v] of Object.entries(criticStats)) metrics[k] = mean(v);
    metrics['actor/nan_skipped'] = actorSkipped;
    metrics['actor/lr'] = c.actor.lr;
    metrics['timing_s/update_actor'] = actorTime;
    if (this.critic) {
      metrics['critic/nan_skipped'] = criticSkipped;
      metrics['critic/lr'] = c.critic.lr;
      metrics['timing_s/update_critic'] = criticTime;
    }
    if (actorSkipped) this.log(`step ${step}: skipped ${actorSkipped} actor update(s) with a non-finite loss or gradient norm`);
    if (criticSkipped) this.log(`step ${step}: skipped ${criticSkipped} critic update(s) with a non-finite loss or gradient norm`);
    return metrics;
  }

  /**
   * One actor optimizer step over a mini-batch, gradients accumulated over its micro-batches (each micro-batch's
   * loss divided by their number, veRL's gradient accumulation). Skipped when the loss or grad norm is not finite.
   */
  private async actorMiniBatch(
    step: number,
    seqs: readonly TokenizedTrajectory[],
    mini: readonly number[],
    oldLogProbs: readonly Float32Array[],
    advantages: readonly Float32Array[],
    refLogProbs: readonly Float32Array[] | null,
  ): Promise<{ applied: boolean; stats: Record<string, number> }> {
    const a = this.config.actor;
    const micros = chunks(mini, a.ppoMicroBatchSize);
    const useKlLoss = a.useKlLoss && a.klLossCoef > 0 && refLogProbs !== null;
    let grads: Record<string, tf.Tensor> | null = null;
    let lossSum = 0;
    const parts: Record<string, number[]> = {};
    try {
      for (const micro of micros) {
        const items = micro.map((i) => seqs[i]);
        const batch = padBatch(items, this.padId);
        const width = batch.length - 1;
        const old = padRows(micro.map((i) => oldLogProbs[i]), width);
        const adv = padRows(micro.map((i) => advantages[i]), width);
        const ref = useKlLoss ? padRows(micro.map((i) => refLogProbs![i]), width) : null;
        let readout: tf.Tensor | null = null;
        try {
          const { value, grads: g } = namedVariableGrads(this.actor.variables, () => {
            const { logProbs, entropy } = tokenLogProbs(this.actor, batch.ids, batch.attention);
            const pg = policyLoss({
              logProbs,
              oldLogProbs: old,
              advantages: adv,
              mask: batch.lossMask,
              clipLow: a.clipRatioLow,
              clipHigh: a.clipRatioHigh,
              clipRatioC: a.clipRatioC,
              aggMode: a.lossAggMode,
            });
            const ent = entropyLoss(entropy, batch.lossMask, a.lossAggMode);
            const kl = ref ? klLoss(logProbs, ref, batch.lossMask, a.klLossType, a.lossAggMode) : undefined;
            let loss = actorLoss({ pgLoss: pg.loss, entropyLoss: ent, entropyCoeff: a.entropyCoeff, klLoss: kl, klCoef: a.klLossCoef });
            if (this.lossHook) loss = this.lossHook('actor', step, loss);
            readout = tf.keep(tf.stack([pg.loss, pg.clipfrac, pg.clipfracLower, pg.ppoKl, ent, kl ?? tf.scalar(NaN), loss]));
            return tf.div(loss, micros.length) as tf.Scalar;
          });
          value.dispose();
          grads = accumulate(grads, g);
          const [pgLoss, clipfrac, clipfracLower, ppoKl, entropyValue, klValue, loss] = Array.from(await readout!.data());
          lossSum += loss;
          push(parts, 'actor/pg_loss', pgLoss);
          push(parts, 'actor/pg_clipfrac', clipfrac);
          push(parts, 'actor/pg_clipfrac_lower', clipfracLower);
          push(parts, 'actor/ppo_kl', ppoKl);
          push(parts, 'actor/entropy_loss', entropyValue);
          if (useKlLoss) push(parts, 'actor/kl_loss', klValue);
        } finally {
          tf.dispose([old, adv, ...(ref ? [ref] : []), ...(readout ? [readout] : [])]);
          disposeBatch(batch);
        }
      }
      const stats: Record<string, number> = {};
      for (const [k, v] of Object.entries(parts)) stats[k] = mean(v);
      if (useKlLoss) stats['actor/kl_coef'] = a.klLossCoef;
      const applied = await this.applyGrads(grads!, this.actorOptim, a.gradClip, lossSum, (norm) => (stats['actor/grad_norm'] = norm));
      return { applied, stats };
    } finally {
      if (grads) tf.dispose(Object.values(grads));
    }
  }

  /** One critic optimizer step over a mini-batch (clipped value loss), accumulated like the actor's. */
  private async criticMiniBatch(
    step: number,
    seqs: readonly TokenizedTrajectory[],
    mini: readonly number[],
    oldValues: readonly Float32Array[],
    returns: readonly Float32Array[],
  ): Promise<{ applied: boolean; stats: Record<string, number> }> {
    const critic = this.critic!;
    const micros = chunks(mini, this.config.actor.ppoMicroBatchSize);
    let grads: Record<string, tf.Tensor> | null = null;
    let lossSum = 0;
    const parts: Record<string, number[]> = {};
    try {
      for (const micro of micros) {
        const items = micro.map((i) => seqs[i]);
        const batch = padBatch(items, this.padId);
        const width = batch.length - 1;
        const oldV = padRows(micro.map((i) => oldValues[i]), width);
        const ret = padRows(micro.map((i) => returns[i]), width);
        let readout: tf.Tensor | null = null;
        try {
          const { value, grads: g } = namedVariableGrads(critic.variables, () => {
            const values = (critic.forward(batch.ids, batch.attention) as tf.Tensor2D).slice([0, 0], [items.length, width]);
            const vf = valueLoss({
              values,
              oldValues: oldV,
              returns: ret,
              mask: batch.lossMask,
              clipRange: this.config.critic.cliprangeValue,
              aggMode: this.config.actor.lossAggMode,
            });
            let loss = vf.loss;
            if (this.lossHook) loss = this.lossHook('critic', step, loss);
            const vpred = tf.div(tf.sum(tf.mul(values, batch.lossMask)), tf.maximum(tf.sum(batch.lossMask), 1));
            readout = tf.keep(tf.stack([vf.loss, vf.clipfrac, vpred, loss]));
            return tf.div(loss, micros.length) as tf.Scalar;
          });
          value.dispose();
          grads = accumulate(grads, g);
          const [vfLoss, vfClipfrac, vpred, loss] = Array.from(await readout!.data());
          lossSum += loss;
          push(parts, 'critic/vf_loss', vfLoss);
          push(parts, 'critic/vf_clipfrac', vfClipfrac);
          push(parts, 'critic/vpred_mean', vpred);
        } finally {
          tf.dispose([oldV, ret, ...(readout ? [readout] : [])]);
          disposeBatch(batch);
        }
      }
      const stats: Record<string, number> = {};
      for (const [k, v] of Object.entries(parts)) stats[k] = mean(v);
      const applied = await this.applyGrads(grads!, this.criticOptim!, this.config.critic.gradClip, lossSum, (norm) => (stats['critic/grad_norm'] = norm));
      return { applied, stats };
    } finally {
      if (grads) tf.dispose(Object.values(grads));
    }
  }

  /** Clip to the global norm and step, unless the loss or the norm is not finite (then nothing is written). */
  private async applyGrads(
    grads: Record<string, tf.Tensor>,
    optimizer: AdamW,
    maxNorm: number,
    loss: number,
    reportNorm: (norm: number) => void,
  ): Promise<boolean> {
    const clipped = await clipGradNormAsync(grads, maxNorm);
    try {
      reportNorm(clipped.norm);
      if (!Number.isFinite(loss) || !Number.isFinite(clipped.norm)) return false;
      optimizer.step(clipped.grads);
      return true;
    } finally {
      tf.dispose(Object.values(clipped.grads));
    }
  }

  // -------------------------------------------------------------------------------------------------------------
  // Checkpoints

  /**
   * Everything needed to continue this run, as files: the actor in Hugging Face Qwen2 format at the top level
   * (config.json, model.safetensors, tokenizer files: the directory loads in transformers), the critic under
   * `critic/`, the reference weights (when a KL term is on), AdamW moments and trainer_state.json.
   */
  async checkpointFiles(): Promise<Record<string, Uint8Array>> {
    this.checkAlive();
    const files: Record<string, Uint8Array> = { ...(await checkpointFiles(this.actor, this.tokenizer)) };
    if (this.critic) {
      for (const [name, bytes] of Object.entries(await checkpointFiles(this.critic, this.tokenizer))) files[CRITIC_PREFIX + name] = bytes;
    }
    if (this.ref) files[REF_FILE] = await tensorsFile(this.ref.variables, '');
    const optim: Record<string, tf.Tensor> = {};
    const actorState = this.actorOptim.getState();
    const criticState = this.criticOptim?.getState();
    try {
      for (const [name, t] of Object.entries(actorState.m)) optim[`actor.m.${name}`] = t;
      for (const [name, t] of Object.entries(actorState.v)) optim[`actor.v.${name}`] = t;
      if (criticState) {
        for (const [name, t] of Object.entries(criticState.m)) optim[`critic.m.${name}`] = t;
        for (const [name, t] of Object.entries(criticState.v)) optim[`critic.v.${name}`] = t;
      }
      files[OPTIMIZER_FILE] = await tensorsFile(optim, '');
    } finally {
      tf.dispose(Object.values(optim));
    }
    const state: TrainerState = {
      format: STATE_FORMAT,
      step: this.stepCount,
      initialValidationDone: this.initialValidationDone,
      stoppedBy: this.stopped,
      actorOptimizerSteps: actorState.step,
      criticOptimizerSteps: criticState?.step ?? 0,
      earlyStop: this.stopper.state(),
      echoTrap: this.echoTrap.toState(),
      nextTrainSeed: this.trainSeedBase(this.stepCount + 1),
      lastValidation: finiteOnly(this.lastValidation),
    };
    files[STATE_FILE] = new TextEncoder().encode(JSON.stringify(state, null, 2) + '\n');
    return files;
  }

  private restore(state: TrainerState, files: Record<string, Uint8Array>): void {
    const optim = readTensors(files[OPTIMIZER_FILE], OPTIMIZER_FILE, '');
    try {
      const pick = (prefix: string) => {
        const out: Record<string, tf.Tensor> = {};
        for (const [name, t] of Object.entries(optim)) if (name.startsWith(prefix)) out[name.slice(prefix.length)] = t;
        return out;
      };
      this.actorOptim.setState({ step: state.actorOptimizerSteps, m: pick('actor.m.'), v: pick('actor.v.') });
      if (this.criticOptim) this.criticOptim.setState({ step: state.criticOptimizerSteps, m: pick('critic.m.'), v: pick('critic.v.') });
    } finally {
      tf.dispose(Object.values(optim));
    }
    this.stepCount = state.step;
    this.initialValidationDone = state.initialValidationDone;
    this.stopped = state.stoppedBy;
    this.lastValidation = { ...state.lastValidation };
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    this.actorOptim.dispose();
    this.criticOptim?.dispose();
    this.actor.dispose();
    this.critic?.dispose();
    this.ref?.dispose();
  }

  private checkAlive(): void {
    if (this.disposed) throw new Error('Trainer: used after dispose()');
  }
}

/** The step a trainer checkpoint was taken at (reads trainer_state.json). */
export function checkpointStep(files: Record<string, Uint8Array>): number {
  return readState(files).step;
}

// -------------------------------------------------------------------------------------------------------------
// Small helpers

function readState(files: Record<string, Uint8Array>): TrainerState {
  const bytes = files[STATE_FILE];
  if (!bytes) throw new Error(`trainer checkpoint: ${STATE_FILE} is missing (not a checkpoint written by the trainer)`);
  let state: TrainerState;
  try {
    state = JSON.parse(new TextDecoder().decode(bytes)) as TrainerState;
  } catch (err) {
    throw new Error(`trainer checkpoint: ${STATE_FILE} is not valid JSON: ${(err as Error).message}`);
  }
  if (state.format !== STATE_FORMAT) throw new Error(`trainer checkpoint: ${STATE_FILE} has format ${JSON.stringify(state.format)}, expected "${STATE_FORMAT}"`);
  if (!Number.isInteger(state.step) || state.step < 0) throw new Error(`trainer checkpoint: bad step ${state.step} in ${STATE_FILE}`);
  if (!files[OPTIMIZER_FILE]) throw new Error(`trainer checkpoint: ${OPTIMIZER_FILE} is missing`);
  return state;
}

function topLevelFiles(files: Record<string, Uint8Array>): Record<string, Uint8Array> {
  return Object.fromEntries(Object.entries(files).filter(([name]) => !name.includes('/')));
}

function prefixedFiles(files: Record<string, Uint8Array>, prefix: string): Record<string, Uint8Array> {
  const out: Record<string, Uint8Array> = {};
  for (const [name, bytes] of Object.entries(files)) if (name.startsWith(prefix)) out[name.slice(prefix.length)] = bytes;
  return out;
}

async function tensorsFile(tensors: Record<string, tf.Tensor>, prefix: string): Promise<Uint8Array> {
  const out: Record<string, { shape: number[]; data: Float32Array }> = {};
  for (const [name, t] of Object.entries(tensors)) out[prefix + name] = { shape: t.shape.slice(), data: (await t.data()) as Float32Array };
  return serializeSafetensors(out);
}

function readTensors(bytes: Uint8Array | undefined, file: string, prefix: string): Record<string, tf.Tensor> {
  if (!bytes) throw new Error(`trainer checkpoint: ${file} is missing`);
  let entries;
  try {
    entries = indexSafetensors(bytes).entries;
  } catch (err) {
    throw new Error(`trainer checkpoint: ${file}: ${(err as Error).message}`);
  }
  const out: Record<string, tf.Tensor> = {};
  for (const [name, e] of Object.entries(entries)) if (name.startsWith(prefix)) out[name.slice(prefix.length)] = tf.tensor(e.read(), e.shape, 'float32');
  return out;
}

function accumulate(acc: Record<string, tf.Tensor> | null, grads: Record<string, tf.Tensor>): Record<string, tf.Tensor> {
  if (!acc) return grads;
  for (const [name, g] of Object.entries(grads)) {
    const prev = acc[name];
    if (prev) {
      acc[name] = tf.add(prev, g);
      prev.dispose();
      g.dispose();
    } else {
      acc[name] = g;
    }
  }
  return acc;
}

function push(stats: Record<string, number[]>, key: string, value: number): void {
  (stats[key] ??= []).push(value);
}

function pushStats(into: Record<string, number[]>, stats: Record<string, number>): void {
  for (const [k, v] of Object.entries(stats)) push(into, k, v);
}

/** Mean over all loss tokens of the batch. */
function maskedRowMean(rows: readonly ArrayLike<number>[], masks: readonly ArrayLike<number>[]): number {
  let s = 0, n = 0;
  rows.forEach((row, i) => {
    for (let j = 0; j < row.length; j++) if (masks[i][j]) { s += row[j]; n++; }
  });
  return n ? s / n : NaN;
}

function finiteOnly(m: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.entries(m).filter(([, v]) => Number.isFinite(v)));
}
