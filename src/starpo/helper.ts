// The Trainer's helper on a second CPU core. tfjs's wasm and cpu backends use one thread each, so a training step on
// a 2-core machine leaves a core idle. A helper is a worker (a Node worker thread: src/node/helperThread.ts; a web
// worker: workers/helper.worker.ts) that owns its own tfjs, and does the step's work that does not depend on the
// main thread's, at the same time:
//   - rollouts: half of each rollout batch (the env ids the Trainer hands it), on a copy of the actor's weights;
//   - the critic (PPO): its values while the main thread scores the actor, then its updates while the main thread
//     updates the actor (given the advantages, the two updates are independent, so running them side by side
//     computes exactly what running them one after the other does).
// The helper keeps no training state of its own: the Trainer sends the actor's weights when they changed and the
// critic's weights and AdamW moments when they changed, and takes the updated critic back after each step, so
// checkpoints, resume and the NaN guard work as without a helper. Every number it produces is the one the main
// thread would compute: same kernels, same arithmetic, and sampling streams keyed by env id (generate.ts).
//
// Only structured-cloneable data crosses the boundary (Comlink): numbers, strings, typed arrays, plain objects.
import * as tf from '@tensorflow/tfjs';
import type { GenerateContext } from '../agent/index';
import { AdamW } from '../model/adamw';
import { initBackend, type BackendOptions } from '../model/backend';
import type { BackendName } from '../model/backendNames';
import type { Qwen2Config } from '../model/config';
import { Qwen2Model, qwen2WeightShapes, stackHfWeights, withHfWeights } from '../model/qwen2';
import { mixSeed } from '../model/seeded';
import { Tokenizer } from '../model/tokenizer';
import { chunks, scoreValues, type TokenizedTrajectory } from './batch';
import type { LossAggMode } from './config';
import { policyGenerateFn } from './policyAgent';
import { criticLoss, miniBatchUpdate } from './update';

/** Named weights as plain arrays (what crosses to and from the helper). */
export type NamedArrays = Record<string, Float32Array>;

/** A model's weights and, for the critic, its AdamW state. */
export interface ModelState {
  weights: NamedArrays;
  optimizer?: { step: number; m: NamedArrays; v: NamedArrays };
}

export interface HelperInit {
  backend: Extract<BackendName, 'wasm' | 'cpu'>;
  /** Browser only: where the wasm binaries are (BackendOptions.wasmPaths). */
  wasmPaths?: BackendOptions['wasmPaths'];
  modelConfig: Qwen2Config;
  /** The tokenizer as its two Hugging Face files (tokenizer.json, tokenizer_config.json), parsed. */
  tokenizer: { json: object; config: object };
  /** The run's sampling settings (rollout.maxNewTokens, topP, topK, maxBatchSize). */
  sampling: { maxNewTokens: number; topP: number; topK: number; maxBatchSize?: number };
  /** The critic's update settings (PPO), or null when the run has no critic. */
  critic: null | {
    lr: number;
    betas: [number, number];
    weightDecay: number;
    gradClip: number;
    cliprangeValue: number;
    lossAggMode: LossAggMode;
    microBatchSize: number;
    padId: number;
    /** model.gradientCheckpointing of the run. */
    gradientCheckpointing?: boolean;
    /** model.sharePrefix of the run. */
    sharePrefix?: boolean;
  };
}

export interface CriticTrainResult {
  state: ModelState;
  /** Each logged critic metric, one value per optimizer step. */
  stats: Record<string, number[]>;
  /** Optimizer steps skipped for a non-finite loss, grad norm or updated weight. */
  skipped: number;
  seconds: number;
}

/** What a helper does, called through Comlink. Each method's arguments are copied into the worker. */
export interface HelperApi {
  init(init: HelperInit): Promise<string>;
  setActor(weights: NamedArrays): Promise<void>;
  /**
   * Continuations for `prompts` of one rollout turn, sampled as the Trainer's policyGenerateFn would with seeds
   * mixSeed(...seedParts, call) at `temperature`.
   */
  generate(prompts: string[], context: GenerateContext, temperature: number, seedParts: number[]): Promise<string[]>;
  /** Frees the KV caches of the current rollout batch. */
  release(): Promise<void>;
  setCritic(state: ModelState): Promise<void>;
  criticValues(seqs: TokenizedTrajectory[]): Promise<Float32Array[]>;
  /** ppoEpochs x mini-batches of critic updates, in order; returns the new critic and the logged metrics. */
  criticTrain(
    seqs: TokenizedTrajectory[],
    miniBatches: number[][],
    epochs: number,
    oldValues: Float32Array[],
    returns: Float32Array[],
  ): Promise<CriticTrainResult>;
}

/** Copies a model's variables (and optimizer state) out as plain arrays, by HF name (the stacked q/k/v and gate/up
 *  split, withHfWeights). A LoRA model's weights go out with the adapters folded in: the helper generates with them
 *  (a LoRA critic is not sent: Trainer.remoteCritic). */
export async function modelState(model: Qwen2Model, optimizer?: AdamW): Promise<ModelState> {
  const arrays = (tensors: Record<string, tf.Tensor>) =>
    withHfWeights(model.config, tensors, async (hf) => {
      const out: NamedArrays = {};
      for (const [name, t] of Object.entries(hf)) out[name] = (await t.data()) as Float32Array;
      return out;
    });
  const merged = model.lora ? model.mergedWeights() : null;
  let state: ModelState;
  try {
    state = { weights: await arrays(merged ?? model.variables) };
  } finally {
    if (merged) tf.dispose(Object.values(merged));
  }
  if (optimizer) {
    const s = optimizer.getState();
    try {
      state.optimizer = { step: s.step, m: await arrays(s.m), v: await arrays(s.v) };
    } finally {
      tf.dispose([...Object.values(s.m), ...Object.values(s.v)]);
    }
  }
  return state;
}

/** Writes plain arrays (by HF name, as modelState sends them) back into a model's variables (and optimizer state). */
export function loadModelState(model: Qwen2Model, state: ModelState, optimizer?: AdamW): void {
  const shapes = qwen2WeightShapes(model.config, { valueHead: model.hasValueHead });
  // HF name -> tensor for every weight, then stacked into the model's layout (stackHfWeights).
  const tensors = (arrays: NamedArrays) =>
    tf.tidy(() =>
      stackHfWeights(
        Object.fromEntries(
          Object.entries(shapes).map(([name, shape]) => {
            if (!arrays[name]) throw new Error(`helper: the weights lack '${name}'`);
            return [name, tf.tensor(arrays[name], shape, 'float32')];
          }),
        ),
        { consume: true },
      ),
    );
  tf.tidy(() => {
    const w = tensors(state.weights);
    for (const [name, v] of Object.entries(model.variables)) v.assign(w[name]);
  });
  if (optimizer && state.optimizer) {
    const s = state.optimizer;
    const m = tensors(s.m),
      v = tensors(s.v);
    try {
      optimizer.setState({ step: s.step, m, v });
    } finally {
      tf.dispose([...Object.values(m), ...Object.values(v)]);
    }
  }
}

/** A model whose weights are the given arrays (shapes from the config). */
function modelFromArrays(config: Qwen2Config, arrays: NamedArrays, valueHead: boolean): Qwen2Model {
  const weights: Record<string, tf.Tensor> = {};
  for (const [name, shape] of Object.entries(qwen2WeightShapes(config, { valueHead }))) {
    if (!arrays[name]) throw new Error(`helper: the weights lack '${name}'`);
    weights[name] = tf.tensor(arrays[name], shape, 'float32');
  }
  return new Qwen2Model(config, weights, { valueHead });
}

/** The helper's implementation (the worker entry files expose it through Comlink). */
export function createHelper(): HelperApi {
  let setup: HelperInit | null = null;
  let tokenizer: Tokenizer | null = null;
  let actor: Qwen2Model | null = null;
  let critic: Qwen2Model | null = null;
  let criticOptim: AdamW | null = null;
  // One GenerateFn per rollout batch (turn 1 starts one), holding the batch's KV caches.
  let rollout: { fn: ReturnType<typeof policyGenerateFn>; key: string } | null = null;
  const ready = () => {
    if (!setup || !tokenizer) throw new Error('helper: init() was not called');
    return { setup, tokenizer };
  };

  return {
    async init(init) {
      const backend = await initBackend(init.backend, { wasmPaths: init.wasmPaths });
      setup = init;
      tokenizer = Tokenizer.fromJSON(init.tokenizer.json, init.tokenizer.config);
      return backend.adapter;
    },

    async setActor(weights) {
      const { setup } = ready();
      if (actor) loadModelState(actor, { weights });
      else actor = modelFromArrays(setup.modelConfig, weights, false);
    },

    async generate(prompts, context, temperature, seedParts) {
      const { setup, tokenizer } = ready();
      if (!actor) throw new Error('helper: generate() before setActor()');
      const key = `${temperature}/${seedParts.join(',')}`;
      if (context.turn === 1 || !rollout || rollout.key !== key) {
        rollout?.fn.release?.();
        rollout = {
          key,
          fn: policyGenerateFn(actor, tokenizer, {
            ...setup.sampling,
            temperature,
            seedForCall: (call) => mixSeed(...seedParts, call),
          }),
        };
      }
      return rollout.fn(prompts, context);
    },

    async release() {
      rollout?.fn.release?.();
      rollout = null;
    },

    async setCritic(state) {
      const { setup } = ready();
      const c = setup.critic;
      if (!c) throw new Error('helper: this run has no critic');
      if (!critic) {
        critic = modelFromArrays(setup.modelConfig, state.weights, true);
        critic.gradientCheckpointing = !!c.gradientCheckpointing;
        critic.sharePrefix = !!c.sharePrefix;
        criticOptim = new AdamW(critic.variables, { lr: c.lr, betas: c.betas, weightDecay: c.weightDecay });
      }
      loadModelState(critic, state, criticOptim!);
    },

    async criticValues(seqs) {
      const c = ready().setup.critic;
      if (!critic || !c) throw new Error('helper: criticValues() before setCritic()');
      return scoreValues(
        critic,
        seqs,
        chunks(
          seqs.map((_, i) => i),
          c.microBatchSize,
        ),
        c.padId,
      );
    },

    async criticTrain(seqs, miniBatches, epochs, oldValues, returns) {
      const c = ready().setup.critic;
      if (!critic || !criticOptim || !c) throw new Error('helper: criticTrain() before setCritic()');
      const start = performance.now();
      const stats: Record<string, number[]> = {};
      let skipped = 0;
      const options = {
        model: critic,
        optimizer: criticOptim,
        microBatchSize: c.microBatchSize,
        gradClip: c.gradClip,
        padId: c.padId,
        gradNormKey: 'critic/grad_norm',
      };
      const loss = criticLoss(critic, c, oldValues, returns);
      for (let epoch = 0; epoch < epochs; epoch++) {
        for (const mini of miniBatches) {
          const r = await miniBatchUpdate(options, seqs, mini, loss);
          if (!r.applied) skipped++;
          for (const [k, v] of Object.entries(r.stats)) (stats[k] ??= []).push(v);
        }
      }
      return {
        state: await modelState(critic, criticOptim),
        stats,
        skipped,
        seconds: (performance.now() - start) / 1000,
      };
    },
  };
}
