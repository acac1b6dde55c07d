// Where a training step's work runs: on the Trainer's thread alone, or shared with a helper on a second core
// (helper.ts; spawned by the caller: src/node/helperThread.ts in Node, the playground's worker in the browser).
// The Trainer's algorithm (trainer.ts) is written once, whatever runs where; this file holds the plumbing:
//   - start-up: what the helper needs to generate and to train the critic (it loads tfjs on the same backend);
//   - staleness: the helper holds copies of the actor's and the critic's weights, sent again only when they changed;
//   - generation: the dialogues of odd env ids are generated on the helper, at the same time as the even ones here;
//   - the critic (PPO): CriticWork, its values before the update and its update, either here (in the Trainer's own
//     order, one thing at a time) or on the helper, while this thread scores and then updates the actor.
// Given the advantages the critic's update does not depend on the actor's, so running them side by side computes
// exactly what running them one after the other does: same metrics and weights with or without a helper
// (tests/unit/starpo/helper.test.ts).
import * as tf from '@tensorflow/tfjs';
import type { GenerateFn } from '../agent/index';
import type { AdamW } from '../model/adamw';
import type { Qwen2Model } from '../model/qwen2';
import type { Tokenizer } from '../model/tokenizer';
import { chunks, scoreValues, type TokenizedTrajectory } from './batch';
import type { LossAggMode, RunConfig } from './config';
import { loadModelState, modelState, type HelperApi } from './helper';
import { criticLoss, type MicroBatchLoss, type UpdateRows } from './update';

/** What a model's update logged: each metric once per optimizer step, the steps skipped (non-finite), its seconds. */
export interface UpdateLog {
  stats: Record<string, number[]>;
  skipped: number;
  seconds: number;
}

/** The critic's update log. */
export interface CriticLog extends UpdateLog {
  /** The values the update's first forward pass computed, read back when it was given no old values; else null. */
  values: Float32Array[] | null;
}

/** The critic's share of a training step (PPO), wherever it runs. */
export interface CriticWork {
  /**
   * Starts computing V(prefix up to t) of every sequence before the update (veRL's old values, zero off the loss
   * mask); the returned function waits for them. Here they are computed when waited for; on the helper, from now on.
   */
  values(seqs: TokenizedTrajectory[]): Promise<() => Promise<Float32Array[]>>;
  /**
   * Starts the critic's update towards `returns`: `epochs` passes over `miniBatches`, in order. With `oldValues`
   * null (one epoch over one mini-batch) the first forward pass's values are the old ones and come back in the log.
   * Here it is done when this resolves (the critic first, as veRL); on the helper it runs while this thread updates
   * the actor. `finished` gives its log once the critic here holds the updated weights.
   */
  update(
    seqs: TokenizedTrajectory[],
    miniBatches: number[][],
    epochs: number,
    oldValues: Float32Array[] | null,
    returns: Float32Array[],
  ): Promise<{ finished: Promise<CriticLog> }>;
}

/**
 * The critic's work on the Trainer's thread: its values scored when waited for (after the actor's scoring, one thing
 * at a time, `afterScoring` after each micro-batch), its update run at once, before the actor's (as veRL), through
 * the Trainer's `run`, which logs into `log`.
 */
export function criticWorkHere(o: {
  critic: Qwen2Model;
  lossConfig: { cliprangeValue: number; lossAggMode: LossAggMode };
  microBatchSize: number;
  padId: number;
  afterScoring: () => Promise<void>;
  run: (mini: readonly number[], lossOf: MicroBatchLoss) => Promise<UpdateRows>;
  log: UpdateLog;
}): CriticWork {
  return {
    values: async (seqs) => () =>
      scoreValues(
        o.critic,
        seqs,
        chunks(
          seqs.map((_, i) => i),
          o.microBatchSize,
        ),
        o.padId,
        o.afterScoring,
      ),
    update: async (seqs, miniBatches, epochs, oldValues, returns) => {
      const lossOf = criticLoss(o.critic, o.lossConfig, oldValues, returns);
      const values: Float32Array[] = [];
      for (let epoch = 0; epoch < epochs; epoch++) {
        for (const mini of miniBatches) values.push(...((await o.run(mini, lossOf)).values ?? []));
      }
      return { finished: Promise.resolve({ ...o.log, values: oldValues ? null : values }) };
    },
  };
}

/** The Trainer's side of its helper. */
export class HelperLink {
  /** What the helper holds is out of date: the actor's weights changed (an update), or it never got the critic's. */
  private stale = { actor: true, critic: true };

  private constructor(
    private readonly helper: HelperApi,
    /** The critic's work goes to the helper (PPO; a loss hook keeps it here, where the hook runs, and so does a LoRA
     *  critic: the helper holds plain weights, and generates with the actor's adapters folded in). */
    readonly runsCritic: boolean,
  ) {}

  /** Hands the helper what it needs to generate and to train the critic (it loads tfjs on the same backend). */
  static async start(
    helper: HelperApi,
    o: {
      config: RunConfig;
      actor: Qwen2Model;
      critic: Qwen2Model | null;
      tokenizer: Tokenizer;
      padId: number;
      criticStaysHere: boolean;
    },
  ): Promise<HelperLink> {
    const backend = tf.getBackend();
    if (backend !== 'wasm' && backend !== 'cpu')
      throw new Error(`Trainer: a helper runs on wasm or cpu, not ${backend}`);
    const c = o.config;
    await helper.init({
      backend,
      modelConfig: o.actor.config,
      tokenizer: { json: o.tokenizer.toJSON(), config: o.tokenizer.configJSON() },
      sampling: {
        maxNewTokens: c.rollout.maxNewTokens,
        topP: c.rollout.topP,
        topK: c.rollout.topK,
        maxBatchSize: c.rollout.maxBatchSize,
      },
      critic: o.critic
        ? {
            lr: c.critic.lr,
            betas: c.critic.betas,
            weightDecay: c.critic.weightDecay,
            gradClip: c.critic.gradClip,
            cliprangeValue: c.critic.cliprangeValue,
            lossAggMode: c.actor.lossAggMode,
            microBatchSize: c.actor.ppoMicroBatchSize,
            padId: o.padId,
            gradientCheckpointing: c.model.gradientCheckpointing,
            sharePrefix: c.model.sharePrefix,
          }
        : null,
    });
    return new HelperLink(helper, o.critic !== null && !o.criticStaysHere);
  }

  /** The actor's weights changed: the helper gets them again before it next generates. */
  actorChanged(): void {
    this.stale.actor = true;
  }

  /**
   * `local` with the dialogues of odd env ids generated on the helper, at the same time, sampled as `local` would
   * with seeds mixSeed(...seedParts, call) at `temperature` (the helper first gets the actor's weights if they changed).
   */
  async splitGeneration(
    local: GenerateFn,
    actor: Qwen2Model,
    temperature: number,
    seedParts: number[],
  ): Promise<GenerateFn> {
    const helper = this.helper;
    if (this.stale.actor) {
      await helper.setActor((await modelState(actor)).weights);
      this.stale.actor = false;
    }
    // Only data crosses to the worker: the progress callback stays here (the local half reports for both).
    const remote: GenerateFn = (prompts, context) =>
      helper.generate(prompts, { keys: [...context!.keys], turn: context!.turn }, temperature, seedParts);
    remote.release = () => void helper.release();
    return splitGenerateFn(local, remote, (envId) => envId % 2 === 1);
  }

  /** The critic's work on the helper; `critic` and `optimizer` here get its updated state after each update. */
  criticWork(critic: Qwen2Model, optimizer: AdamW): CriticWork {
    const sendCritic = async () => {
      if (!this.stale.critic) return;
      await this.helper.setCritic(await modelState(critic, optimizer));
      this.stale.critic = false;
    };
    return {
      values: async (seqs) => {
        await sendCritic();
        const values = this.helper.criticValues(seqs);
        values.catch(() => {}); // (waited for after the actor's scoring; a failure surfaces there)
        return () => values;
      },
      update: async (seqs, miniBatches, epochs, oldValues, returns) => {
        if (!oldValues) throw new Error('Trainer: the critic on a helper needs the old values scored first');
        await sendCritic();
        const finished = this.helper.criticTrain(seqs, miniBatches, epochs, oldValues, returns).then((r): CriticLog => {
          loadModelState(critic, r.state, optimizer); // the helper and this thread hold the same critic again
          return { stats: r.stats, skipped: r.skipped, seconds: r.seconds, values: null };
        });
        finished.catch(() => {}); // (waited for after the actor's update; a failure surfaces there)
        return { finished };
      },
    };
  }
}

/**
 * A GenerateFn that sends the prompts of some dialogues to `remote` (a helper worker) and the rest to `local`, both
 * at once. Which side a prompt goes to depends only on its key (env id), so each side keeps its own dialogues'
 * KV caches from turn to turn; without a context everything stays local.
 */
export function splitGenerateFn(local: GenerateFn, remote: GenerateFn, isRemote: (key: number) => boolean): GenerateFn {
  const fn: GenerateFn = async (prompts, context) => {
    if (!context) return local(prompts);
    const sides = { local: [] as number[], remote: [] as number[] };
    context.keys.forEach((key, i) => sides[isRemote(key) ? 'remote' : 'local'].push(i));
    const part = (idx: number[]) => ({
      prompts: idx.map((i) => prompts[i]),
      context: { ...context, keys: idx.map((i) => context.keys[i]) },
    });
    // Post the remote half first: the local half then runs on this thread while the worker computes its own.
    const r = part(sides.remote),
      l = part(sides.local);
    const remoteOut = sides.remote.length ? remote(r.prompts, r.context) : Promise.resolve([]);
    const localOut = sides.local.length ? await local(l.prompts, l.context) : [];
    const remoteDone = await remoteOut;
    const out = new Array<string>(prompts.length);
    sides.local.forEach((i, k) => (out[i] = localOut[k]));
    sides.remote.forEach((i, k) => (out[i] = remoteDone[k]));
    return out;
  };
  fn.release = () => {
    local.release?.();
    remote.release?.();
  };
  return fn;
}
