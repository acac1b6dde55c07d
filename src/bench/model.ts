// Model throughput, for `ragen bench --only model`. Measures and returns; says why a measurement was skipped
// through `note`, never prints. tools/bench/torch_bench.py measures the same shapes, the same way, in PyTorch, from
// the spec that benchSpec() writes, so the two sides cannot drift apart.
//
// What is measured (random weights and random token ids: throughput does not depend on what the model knows):
//   training tokens/s  = (trainBatch x trainSeq) / seconds per update, one update being: forward over the whole
//                        batch, per-token log-probs and entropy, loss = -mean(log-prob) - 0.001 mean(entropy)
//                        (the shape of RAGEN's policy loss with its entropy bonus), backward, gradient clipping to
//                        global norm 1, one AdamW step. No padding: every token is real.
//   generated tokens/s = (genBatch x newTokens) / seconds per generate() call: prefill of genBatch prompts of
//                        promptLen tokens, then newTokens KV-cache decode steps sampled at temperature 1 (RAGEN's
//                        rollout temperature). No stop token, so every row produces exactly newTokens tokens.
//                        `--gen-engine continuous` runs the same calls through the continuous-batching engine
//                        (generateEngine.ts); the rows keep their names, the notes and the JSON's command say which.
// Both are means over the timed repetitions, after `warmup` untimed ones (JIT, wasm pages, shader compilation).
// Memory: the first warm-up repetition of each kind runs under tf.profile (measurePeakMemory below), giving
// "<shape> train|generate peak bytes" and "... peak tensors": the most bytes / tensors held by live tfjs tensors at
// any kernel boundary during that call, weights and AdamW moments included (see measurePeakMemory for what that
// does and does not count). The warm-up is untimed, so the profiler's per-kernel bookkeeping costs no throughput.
import * as tf from '@tensorflow/tfjs';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { AdamW } from '../model/adamw';
import { initBackend, type BackendName } from '../model/backend';
import { webGpuMatMul } from '../model/webgpuMatMulRoute';
import type { Qwen2Config } from '../model/config';
import { generate } from '../model/generate';
import { Qwen2Model, qwen2WeightShapes } from '../model/qwen2';
import { initQwen2WeightsParallel } from '../model/parallelNormal';
import { namedVariableGrads, tokenLogProbs } from '../model/scoring';
import { seededUniform } from '../model/seeded';
import { QWEN_SHAPES, type QwenShapeName } from '../model/qwenShapes';
import { presetConfig } from '../starpo/presets';
import { benchGenerate, type GenEngine } from './generateEngine';

/** The fixed work of one measurement. Same numbers on the tfjs and the PyTorch side. */
export interface ModelWorkload {
  trainBatch: number; // sequences per training update
  trainSeq: number; // tokens per training sequence
  genBatch: number; // prompts per generate() call (env groups x group size in a rollout)
  promptLen: number; // tokens per prompt
  newTokens: number; // tokens generated per prompt
  warmup: number; // untimed repetitions before timing (of each kind)
  /** More generate() batch sizes to measure, same prompts and new tokens per row ("<shape> generate b<N> tokens/s"):
   *  a rollout generates env groups x group size rows at once (RAGEN's paper step: 8 x 16 = 128). */
  genBatches?: number[];
}

/** A Qwen2.5 model's sizes as the benches build it: Qwen's config.json (src/model/qwenShapes.ts), random f32 weights. */
function qwenBenchConfig(shape: QwenShapeName): Qwen2Config {
  const q = QWEN_SHAPES[shape] as unknown as Qwen2Config;
  return {
    model_type: 'qwen2',
    vocab_size: q.vocab_size,
    hidden_size: q.hidden_size,
    intermediate_size: q.intermediate_size,
    num_hidden_layers: q.num_hidden_layers,
    num_attention_heads: q.num_attention_heads,
    num_key_value_heads: q.num_key_value_heads,
    max_position_embeddings: q.max_position_embeddings,
    rope_theta: q.rope_theta,
    rms_norm_eps: q.rms_norm_eps,
    tie_word_embeddings: q.tie_word_embeddings,
  };
}

export interface BenchShape {
  name: string;
  /** One line for the output: where the shape comes from and what was shortened. */
  description: string;
  config: Qwen2Config;
  workload: ModelWorkload;
}

/** What `--shapes` accepts. */
export const BENCH_SHAPE_NAMES = ['tiny', 'sokoban-tiny', 'qwen0.5b', 'qwen3b'] as const;
export type BenchShapeName = (typeof BENCH_SHAPE_NAMES)[number];

// The tiny presets' vocabulary comes from a tokenizer built from the environments' text ("a few hundred entries",
// src/agent/prompt.ts); 512 stands for it here so the benchmark needs no tokenizer.
const TINY_VOCAB = 512;

/** A tiny preset's model as a Qwen2 config (eps and init as Hugging Face's Qwen2 defaults). */
function tinyPresetConfig(preset: string): Qwen2Config {
  const t = presetConfig(preset).model.tiny;
  return {
    model_type: 'qwen2',
    vocab_size: TINY_VOCAB,
    hidden_size: t.hiddenSize,
    intermediate_size: t.intermediateSize,
    num_hidden_layers: t.numLayers,
    num_attention_heads: t.numHeads,
    num_key_value_heads: t.numKvHeads,
    max_position_embeddings: t.maxPositions,
    rope_theta: t.ropeTheta,
    rms_norm_eps: 1e-6,
    tie_word_embeddings: true,
  };
}

/**
 * The shapes, with workloads a rollout and an update of that preset really run: the tiny presets' rollout is
 * 8 env groups x 4 = 32 trajectories with up to 64 new tokens per turn, their PPO micro-batch is 8 sequences.
 * Qwen2.5-0.5B gets batch 1 and short sequences, because on a 2-core CPU one full-length update would take minutes.
 */
export function benchShape(name: string): BenchShape {
  const tinyWork: ModelWorkload = {
    trainBatch: 8,
    trainSeq: 128,
    genBatch: 32,
    promptLen: 64,
    newTokens: 64,
    warmup: 1,
  };
  switch (name) {
    case 'tiny':
      return {
        name,
        config: tinyPresetConfig('bandit-tiny'),
        workload: tinyWork,
        description: `model of bandit-tiny / frozenlake-tiny / echo-trap (vocabulary ${TINY_VOCAB} assumed)`,
      };
    case 'sokoban-tiny':
      return {
        name,
        config: tinyPresetConfig('sokoban-tiny'),
        workload: tinyWork,
        description: `model of sokoban-tiny (vocabulary ${TINY_VOCAB} assumed)`,
      };
    case 'qwen0.5b':
      return {
        name,
        description:
          'Qwen2.5-0.5B shape, random weights; batch 1 and short sequences (RAGEN trains 1-4 x ~1-3k tokens)',
        config: qwenBenchConfig('qwen2.5-0.5b'),
        workload: {
          trainBatch: 1,
          trainSeq: 32,
          genBatch: 1,
          promptLen: 32,
          newTokens: 16,
          warmup: 1,
          genBatches: [16, 128],
        },
      };
    case 'qwen3b':
      return {
        name,
        description:
          "Qwen2.5-3B shape (RAGEN-2's default model), random weights; for the memory section (with --lora: RAGEN's base-lora.yaml)",
        config: qwenBenchConfig('qwen2.5-3b'),
        workload: { trainBatch: 1, trainSeq: 32, genBatch: 1, promptLen: 32, newTokens: 16, warmup: 1 },
      };
    default:
      throw new Error(`unknown model shape '${name}' (expected: ${BENCH_SHAPE_NAMES.join(', ')})`);
  }
}

/** What tools/bench/torch_bench.py reads on stdin: the same shapes, time budget and memory estimates. */
export interface TorchBenchSpec {
  seconds: number;
  shapes: (BenchShape & { bytes: { train: number; generate: number } })[];
}

export function benchSpec(shapes: readonly string[], seconds: number, genBatches?: readonly number[]): TorchBenchSpec {
  return {
    seconds,
    shapes: shapes
      .map((name) => withGenBatches(benchShape(name), genBatches))
      .map((s) => ({
        ...s,
        bytes: { train: estimateBytes(s, 'train'), generate: estimateBytes(s, 'generate') },
      })),
  };
}

/** The shape with `genBatches` (the --gen-batches flag) in place of its own, when given. */
export function withGenBatches(shape: BenchShape, genBatches?: readonly number[]): BenchShape {
  return genBatches ? { ...shape, workload: { ...shape.workload, genBatches: [...genBatches] } } : shape;
}

export function parameterCount(config: Qwen2Config): number {
  return Object.values(qwen2WeightShapes(config)).reduce((sum, s) => sum + s.reduce((a, b) => a * b, 1), 0);
}

/**
 * Rough float32 bytes a measurement needs: weights (1x), and for training also gradients, clipped gradients and
 * AdamW's two moments (4x more), plus the [B, T, V] logit-sized tensors of the loss (about 6 of them).
 */
export function estimateBytes(shape: BenchShape, kind: 'train' | 'generate'): number {
  const { config: c, workload: w } = shape;
  const params = parameterCount(c);
  if (kind === 'generate') {
    const rows = Math.max(w.genBatch, ...(w.genBatches ?? []));
    const cache = 2 * c.num_hidden_layers * rows * (w.promptLen + w.newTokens + 64) * c.hidden_size;
    return 4 * (params + cache + 4 * rows * c.vocab_size);
  }
  return 4 * (5 * params + 6 * w.trainBatch * w.trainSeq * c.vocab_size);
}

/** wasm32 addresses at most 4 GiB, and tfjs's wasm heap lives in it. */
const WASM_HEAP_BYTES = 4 * 1024 ** 3;

/** The cpu backend's arrays are freed by the garbage collector, not at dispose(): a qwen0.5b update was seen to grow
 *  past 20 GB against its 9.3 GiB estimate. So on cpu a measurement must fit this many times over in free memory. */
const CPU_GC_HEADROOM = 2.5;

/** Bytes of estimate a backend can hold, or null when unknown (webgpu: the adapter decides; try and see). */
function memoryLimit(backend: BackendName): number | null {
  if (backend === 'wasm') return WASM_HEAP_BYTES;
  if (backend === 'cpu') return os.freemem() / CPU_GC_HEADROOM;
  return null;
}

export interface BenchModelOptions {
  /** tfjs backend to measure (initialised here; an unavailable backend is an error). */
  backend: BackendName;
  /** Shape names from BENCH_SHAPE_NAMES (default: tiny, qwen0.5b). */
  shapes?: readonly string[];
  /** Least time spent timing each measurement, in seconds (default 1); at least one timed repetition runs. */
  seconds?: number;
  /** Seed of the random weights, token ids and sampling. */
  seed?: number;
  /** Replaces every shape's extra generate() batch sizes (ModelWorkload.genBatches); [] measures none. */
  genBatches?: readonly number[];
  /** What runs the generate rows (default 'turns': generate(), a GenerationSession; see generateEngine.ts). */
  genEngine?: GenEngine;
  /** Receives one line per skipped measurement (and why) and per finished one (its time per repetition). */
  note?: (line: string) => void;
}

/**
 * Tokens per second for each shape: keys "<shape> train tokens/s" and "<shape> generate tokens/s", and the peak
 * tensor memory of one update / one call: "<shape> train peak bytes", "<shape> train peak tensors" (and the same for
 * generate). A measurement that cannot fit in the backend's memory is left out and `note` says so.
 */
export async function benchModel(opts: BenchModelOptions): Promise<Record<string, number>> {
  const seconds = opts.seconds ?? 1;
  if (!(seconds > 0) || !Number.isFinite(seconds)) throw new Error(`benchModel: seconds must be > 0, got ${seconds}`);
  const shapes = (opts.shapes ?? ['tiny', 'qwen0.5b']).map((name) => withGenBatches(benchShape(name), opts.genBatches));
  if (!shapes.length) throw new Error('benchModel: no shapes given');
  const note = opts.note ?? (() => {});
  const seed = opts.seed ?? 0;
  const engine = opts.genEngine ?? 'turns';
  const backend = await initBackend(opts.backend);
  note(
    `tfjs ${tf.version.tfjs} on ${backend.name}${backend.name === 'webgpu' ? ` (${backend.adapter}; matmul: ${webGpuMatMul()})` : ''}` +
      (backend.name === 'webgpu' ? '' : ', one thread'),
  );
  const limit = memoryLimit(opts.backend);

  const results: Record<string, number> = {};
  for (const shape of shapes) {
    const fits = (kind: 'train' | 'generate') => {
      const need = estimateBytes(shape, kind);
      if (limit === null || need <= limit) return true;
      const where =
        opts.backend === 'wasm'
          ? "the wasm heap's 4 GiB"
          : `${gib(os.freemem())} free memory / ${CPU_GC_HEADROOM} (headroom for the garbage collector)`;
      note(
        `${shape.name} ${kind}: not measured on ${opts.backend}: needs about ${gib(need)} (${(parameterCount(shape.config) / 1e6).toFixed(0)}M parameters), more than ${where}`,
      );
      return false;
    };
    const wantTrain = fits('train');
    const wantGenerate = fits('generate');
    if (!wantTrain && !wantGenerate) continue;

    const model = new Qwen2Model(shape.config, await initQwen2WeightsParallel(shape.config, seed));
    try {
      const w = shape.workload;
      if (wantTrain) {
        const { seconds: perStep, peak } = await trainSecondsPerStep(
          model,
          w,
          seconds,
          seed,
          note,
          `${shape.name} train`,
        );
        results[`${shape.name} train tokens/s`] = (w.trainBatch * w.trainSeq) / perStep;
        addPeak(results, `${shape.name} train`, peak);
        note(
          `${shape.name} train: ${fmtSeconds(perStep)} per update of ${w.trainBatch} x ${w.trainSeq} tokens; ${describePeak(peak)}`,
        );
      }
      if (wantTrain && wantGenerate) {
        const counts = await kernelCounts(model, w, seed);
        results[`${shape.name} kernels/update`] = counts.update;
        results[`${shape.name} kernels/decoded token`] = counts.perDecodedToken;
        note(
          `${shape.name}: ${counts.update} kernels per update, ${counts.perDecodedToken} per decoded token ` +
            `(${((counts.perDecodedToken - counts.decodeConstant) / model.config.num_hidden_layers).toFixed(1)} per layer + ${counts.decodeConstant})`,
        );
      }
      if (wantGenerate) {
        const { seconds: perCall, peak } = await generateSecondsPerCall(
          model,
          w,
          seconds,
          seed,
          note,
          `${shape.name} generate`,
          engine,
        );
        results[`${shape.name} generate tokens/s`] = (w.genBatch * w.newTokens) / perCall;
        addPeak(results, `${shape.name} generate`, peak);
        note(
          `${shape.name} generate: ${fmtSeconds(perCall)} per call (${w.genBatch} prompts x ${w.promptLen} tokens, ${w.newTokens} new, ${engine} engine); ${describePeak(peak)}`,
        );
        for (const rows of w.genBatches ?? []) {
          const batch = { ...w, genBatch: rows };
          const what = `${shape.name} generate b${rows}`;
          const r = await generateSecondsPerCall(model, batch, seconds, seed, note, what, engine);
          results[`${what} tokens/s`] = (rows * w.newTokens) / r.seconds;
          addPeak(results, what, r.peak);
          note(
            `${what}: ${fmtSeconds(r.seconds)} per call (${rows} prompts x ${w.promptLen} tokens, ${w.newTokens} new, ${engine} engine); ${describePeak(r.peak)}`,
          );
        }
      }
    } finally {
      model.dispose();
    }
  }
  return results;
}

/**
 * Whether a tf.profile record is a kernel that computes something: Reshape and Identity only relabel a tensor's
 * data (no arithmetic, no copy, no GPU dispatch), and names ending in '__op' or 'unnamed scope' are the op-level
 * scopes around a kernel, not kernels.
 */
export function computes(recordName: string): boolean {
  return (
    recordName !== 'Reshape' &&
    recordName !== 'Identity' &&
    !recordName.endsWith('__op') &&
    recordName !== 'unnamed scope'
  );
}

/** The names of the computing kernels (see computes) that `body` runs, in order. */
export async function computingKernelNames(body: () => Promise<void>): Promise<string[]> {
  return (await tf.profile(body)).kernels.map((k) => k.name).filter(computes);
}

/**
 * Computing kernels (see computes) of one training update as the Trainer runs it
 * (forward, backward, clipping, AdamW), and of one decoded token: the difference between generating 2n and n tokens,
 * divided by n. `decodeConstant` is the decoded token's share outside the layers (embedding, final norm, head,
 * sampling): the same count on a one-layer copy of the model tells one layer's share.
 */
export async function kernelCounts(
  model: Qwen2Model,
  w: ModelWorkload,
  seed: number,
): Promise<{ update: number; perDecodedToken: number; decodeConstant: number }> {
  const count = async (body: () => Promise<void>) => (await computingKernelNames(body)).length;
  const ids = tf.tensor2d(randomIds(w.trainBatch, w.trainSeq, model.config.vocab_size, seed), undefined, 'int32');
  const optimizer = new AdamW(model.variables, { lr: 1e-6 });
  let update: number;
  try {
    update = await count(() => benchUpdate(model, ids, optimizer));
  } finally {
    ids.dispose();
    optimizer.dispose();
  }
  const perToken = async (m: Qwen2Model) => {
    const prompts = randomIds(4, 8, m.config.vocab_size, seed + 2);
    const run = (n: number) =>
      count(async () => {
        await generate(m, prompts, { maxNewTokens: n, temperature: 1, seed, padTokenId: 0 });
      });
    const n = 8;
    return ((await run(2 * n)) - (await run(n))) / n;
  };
  const perDecodedToken = await perToken(model);
  // The same model cut to its first layer: per-token kernels = constant + 1 layer's.
  const one = { ...model.config, num_hidden_layers: 1 };
  const oneLayer = new Qwen2Model(one, await initQwen2WeightsParallel(one, seed));
  try {
    const layers = model.config.num_hidden_layers;
    const perLayer = layers > 1 ? (perDecodedToken - (await perToken(oneLayer))) / (layers - 1) : 0;
    return { update, perDecodedToken, decodeConstant: perDecodedToken - perLayer * model.config.num_hidden_layers };
  } finally {
    oneLayer.dispose();
  }
}

/**
 * The bench's training loss on `ids` (-mean log-prob - 0.001 mean entropy: a policy-gradient update's shape without
 * its advantages) and its gradients for `vars` (default: every variable of the model).
 */
export function benchLossGrads(
  model: Qwen2Model,
  ids: tf.Tensor2D,
  vars: Record<string, tf.Variable> = model.variables,
): { value: tf.Scalar; grads: Record<string, tf.Tensor> } {
  return namedVariableGrads(vars, () =>
    tf.tidy(() => {
      const { logProbs, entropy } = tokenLogProbs(model, ids);
      return logProbs.mean().neg().sub(entropy.mean().mul(0.001)) as tf.Scalar;
    }),
  );
}

/** One bench training update on `ids`: benchLossGrads, then AdamW with clipping at 1.0 (queued, not waited for). */
export async function benchUpdate(model: Qwen2Model, ids: tf.Tensor2D, optimizer: AdamW): Promise<void> {
  const { value, grads } = benchLossGrads(model, ids);
  await optimizer.stepClipped(grads, 1.0);
  tf.dispose([value, ...Object.values(grads)]);
}

/** Random token ids [rows, length] in [0, vocab), from a seeded generator. */
function randomIds(rows: number, length: number, vocab: number, seed: number): number[][] {
  const uniform = seededUniform(seed);
  return Array.from({ length: rows }, () => Array.from({ length }, () => Math.floor(uniform() * vocab)));
}

async function trainSecondsPerStep(
  model: Qwen2Model,
  w: ModelWorkload,
  seconds: number,
  seed: number,
  note: (line: string) => void,
  what: string,
): Promise<Repetitions> {
  const ids = tf.tensor2d(randomIds(w.trainBatch, w.trainSeq, model.config.vocab_size, seed), undefined, 'int32');
  // A small learning rate keeps random weights in range over many repetitions; it does not change the cost.
  const optimizer = new AdamW(model.variables, { lr: 1e-6 });
  const probe = model.variables['model.norm.weight'];
  try {
    return await secondsPerRepetition(
      w.warmup,
      seconds,
      async () => {
        await benchUpdate(model, ids, optimizer);
        // webgpu queues work: reading an updated weight waits until the AdamW step has really run.
        await probe.data();
      },
      note,
      what,
    );
  } finally {
    ids.dispose();
    optimizer.dispose();
  }
}

async function generateSecondsPerCall(
  model: Qwen2Model,
  w: ModelWorkload,
  seconds: number,
  seed: number,
  note: (line: string) => void,
  what: string,
  engine: GenEngine,
): Promise<Repetitions> {
  const prompts = randomIds(w.genBatch, w.promptLen, model.config.vocab_size, seed + 1);
  let call = 0;
  return secondsPerRepetition(
    w.warmup,
    seconds,
    async () => {
      const tokens = await benchGenerate(engine, model, prompts, { maxNewTokens: w.newTokens, seed: seed + call++ });
      const produced = tokens.reduce((n, t) => n + t.length, 0);
      if (produced !== w.genBatch * w.newTokens) {
        throw new Error(`benchModel: generate returned ${produced} tokens, expected ${w.genBatch} x ${w.newTokens}`);
      }
    },
    note,
    what,
  );
}

/** A warm-up repetition longer than this is not repeated for timing: its own time is reported (a lower bound on
 *  throughput, since it is cold), so that a huge shape on a slow backend costs one repetition, not two. */
export const MAX_REPETITION_SECONDS = 60;

/** Mean seconds per timed repetition, and the peak memory of the (profiled) first warm-up repetition. */
interface Repetitions {
  seconds: number;
  peak: PeakMemory;
}

/**
 * Runs `body` `warmup` times untimed (the first of them under tf.profile, for its peak memory), then until `seconds`
 * have passed (at least once); mean seconds per run. If one warm-up run already took longer than
 * MAX_REPETITION_SECONDS, returns that run's time and says so.
 */
async function secondsPerRepetition(
  warmup: number,
  seconds: number,
  body: () => Promise<void>,
  note: (line: string) => void,
  what: string,
): Promise<Repetitions> {
  let peak: PeakMemory | undefined;
  for (let i = 0; i < Math.max(1, warmup); i++) {
    const t0 = performance.now();
    if (i === 0) peak = await measurePeakMemory(body);
    else await body();
    const took = (performance.now() - t0) / 1000;
    if (took > MAX_REPETITION_SECONDS) {
      note(
        `${what}: one cold repetition took ${took.toFixed(0)} s (over ${MAX_REPETITION_SECONDS} s), so it is the ` +
          'figure, unrepeated: a lower bound on throughput',
      );
      return { seconds: took, peak: peak! };
    }
  }
  const start = performance.now();
  let runs = 0;
  let now: number;
  do {
    await body();
    runs++;
    now = performance.now();
  } while (now - start < seconds * 1000);
  return { seconds: (now - start) / 1000 / runs, peak: peak! };
}

// ---------------------------------------------------------------------------------------------------------------
// Peak memory (shared with the step section, step.ts)

/** What one profiled call held at most, counted in live tfjs tensors. */
export interface PeakMemory {
  /**
   * Most bytes held by live tfjs tensors after any kernel of the call (tf.profile's peakBytes, i.e. the engine's
   * tf.memory().numBytes sampled after every kernel). Everything alive before the call counts too (weights, optimizer
   * moments, a critic or reference model), so this is the call's high-water mark, not its own allocation. Not counted:
   * memory a backend keeps outside tensors (the wasm heap's free space, webgpu's buffer pool, kernel scratch).
   */
  peakBytes: number;
  /**
   * Most live tfjs tensors after any kernel of the call (tf.memory().numTensors sampled after every kernel, from
   * tf.profile's per-kernel records). A tensor made without a kernel (tf.tensor(), a data upload) shows up at the next
   * kernel; one made and disposed between two kernels is not seen.
   */
  peakTensors: number;
  /** Live tensors and their bytes just before the call (the resident part of the peaks). */
  startTensors: number;
  startBytes: number;
  /** Kernels the call ran (as tf.profile recorded them). */
  kernels: number;
}

/**
 * Runs `body` once under tf.profile and returns its peak tensor memory. tf.profile records every kernel (name,
 * shapes, memory snapshots): cheap per kernel, but not free, so keep timed runs outside it.
 */
export async function measurePeakMemory(body: () => Promise<void>): Promise<PeakMemory> {
  const engine = tf.engine();
  const start = tf.memory();
  let finished = false;
  let info: Awaited<ReturnType<typeof tf.profile>> | undefined;
  const restoreTimer = throwKernelErrorsWhereTheyHappen();
  try {
    info = await tf.profile(async () => {
      await body();
      finished = true;
    });
  } catch (err) {
    // tf.profile takes Math.max(...) over all its kernel records, which overflows V8's stack (RangeError) past about
    // 120k kernels, after the body has finished. The records are still in the engine's state: read them there.
    if (!finished || !(err instanceof RangeError)) throw err;
  } finally {
    // A body that throws would otherwise leave tfjs profiling (and recording) every later kernel.
    engine.state.profiling = false;
    restoreTimer();
  }
  const records = (info ?? engine.state.activeProfile).kernels;
  let peakBytes = start.numBytes;
  let peakTensors = start.numTensors;
  for (const k of records) {
    if (k.totalBytesSnapshot > peakBytes) peakBytes = k.totalBytesSnapshot;
    if (k.totalTensorsSnapshot > peakTensors) peakTensors = k.totalTensorsSnapshot;
  }
  const kernels = records.length;
  records.length = 0; // the engine keeps the last profile until the next one: free the records now
  return { peakBytes, peakTensors, startTensors: start.numTensors, startBytes: start.numBytes, kernels };
}

/**
 * Under tf.profile, tfjs runs each kernel inside the backend's async `time()`, so a kernel that throws (tfjs-wasm
 * aborting when its heap is full) turns into a rejected promise that nothing awaits, and the engine then fails on the
 * missing outputs with "Cannot read properties of undefined (reading 'map')", which hides the cause. While this wrapper
 * is in place, the kernel's own error is thrown where the kernel ran. Returns the function that removes it.
 */
function throwKernelErrorsWhereTheyHappen(): () => void {
  const backend = tf.backend() as unknown as { time(f: () => void): Promise<unknown> };
  const own = backend.time;
  const hadOwn = Object.prototype.hasOwnProperty.call(backend, 'time');
  backend.time = function (this: unknown, f: () => void) {
    let failure: { error: unknown } | undefined;
    let inCall = true;
    const timing = own.call(this, () => {
      try {
        f();
      } catch (error) {
        if (!inCall) throw error; // a backend that runs f later: its own handling
        failure = { error };
      }
    });
    inCall = false;
    if (!failure) return timing;
    timing.catch(() => {});
    throw failure.error;
  };
  return () => {
    if (hadOwn) backend.time = own;
    else delete (backend as { time?: unknown }).time;
  };
}

/**
 * What went wrong when a tfjs-wasm kernel failed (a WebAssembly.RuntimeError: "Aborted()" when its allocator finds no
 * room, "memory access out of bounds" past what it addresses), with the size its heap had reached; null for any other
 * error. The wasm module is unusable afterwards.
 */
export function wasmFailure(err: unknown): string | null {
  if (!(err instanceof WebAssembly.RuntimeError)) return null;
  const heap = (tf.backend() as unknown as { wasm?: { HEAPU8?: Uint8Array } }).wasm?.HEAPU8?.length;
  if (heap === undefined) return `tfjs-wasm failed (${err.message})`;
  if (heap >= WASM_HEAP_BYTES - 1024 ** 2)
    return `the wasm heap is full (${gib(heap)}, the most tfjs-wasm can address)`;
  return `tfjs-wasm failed with its heap at ${gib(heap)} of the ${gib(WASM_HEAP_BYTES)} it can address (${err.message})`;
}

/** Adds "<what> peak bytes" and "<what> peak tensors". */
export function addPeak(results: Record<string, number>, what: string, peak: PeakMemory): void {
  results[`${what} peak bytes`] = peak.peakBytes;
  results[`${what} peak tensors`] = peak.peakTensors;
}

/** "peak 1.2 MiB in 345 tensors (resident before: 0.9 MiB in 120), 4,321 kernels". */
export function describePeak(p: PeakMemory): string {
  return (
    `peak ${mib(p.peakBytes)} in ${p.peakTensors.toLocaleString('en-US')} tensors ` +
    `(resident before: ${mib(p.startBytes)} in ${p.startTensors.toLocaleString('en-US')}), ${p.kernels.toLocaleString('en-US')} kernels`
  );
}

const mib = (bytes: number) => `${(bytes / 1024 ** 2).toFixed(bytes < 10 * 1024 ** 2 ? 2 : 0)} MiB`;
const gib = (bytes: number) => `${(bytes / 1024 ** 3).toFixed(1)} GiB`;
const fmtSeconds = (s: number) => (s >= 1 ? `${s.toFixed(2)} s` : `${(s * 1000).toFixed(1)} ms`);

// ---------------------------------------------------------------------------------------------------------------
// The PyTorch baseline, run as a child process

/** Path of the PyTorch side of the benchmark. */
export const TORCH_BENCH_SCRIPT = fileURLToPath(new URL('../../tools/bench/torch_bench.py', import.meta.url));

/** The fair PyTorch peer is a current release (scripts/setup.sh puts torch 2.13 CPU in .venv-hf); Debian's
 *  python3-torch 1.13 is several times slower and only a fallback. */
export function defaultTorchPython(): string {
  const venv = fileURLToPath(new URL('../../.venv-hf/bin/python', import.meta.url));
  return existsSync(venv) ? venv : '/usr/bin/python3';
}

export interface TorchBenchOptions {
  /** Shapes and time budget: the same as the tfjs side's (benchSpec); or whole training steps (torchStep.ts);
   *  or single matrix products (matmul.ts: matmulTorchSpec). */
  spec: TorchBenchSpec | { steps: Record<string, unknown>[] } | { seconds: number; matmuls: Record<string, unknown>[] };
  /** Interpreter that has torch (default: Debian's /usr/bin/python3, where python3-torch installs). */
  python?: string;
  /** torch.set_num_threads (default 1: tfjs's wasm and cpu backends use one thread in Node). */
  threads?: number;
  /** torch device (default 'cpu'; 'cuda' to compare with webgpu on a GPU). */
  device?: string;
  /** Receives the script's progress lines (its stderr). */
  progress?: (line: string) => void;
}

export interface TorchBenchResult {
  torch: string; // torch.__version__
  device: string;
  threads: number;
  results: Record<string, number>;
  notes: string[];
}

/** Runs tools/bench/torch_bench.py. Throws, saying what to install, when the interpreter or torch is missing. */
export function runTorchBench(opts: TorchBenchOptions): Promise<TorchBenchResult> {
  const python = opts.python ?? '/usr/bin/python3';
  const threads = opts.threads ?? 1;
  if (!Number.isInteger(threads) || threads < 1)
    throw new Error(`torch threads must be an integer >= 1, got ${threads}`);
  const args = [TORCH_BENCH_SCRIPT, '--threads', String(threads), '--device', opts.device ?? 'cpu'];
  return new Promise((resolve, reject) => {
    const child = spawn(python, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    const stderr: string[] = [];
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      stdout += d;
    });
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      for (const line of d.split('\n').filter(Boolean)) {
        stderr.push(line);
        opts.progress?.(line);
      }
    });
    child.on('error', (err: NodeJS.ErrnoException) => {
      reject(
        new Error(
          err.code === 'ENOENT'
            ? `the PyTorch baseline needs ${python}, which does not exist (install Debian's python3-torch, or pass --python PATH)`
            : `could not start ${python}: ${err.message}`,
        ),
      );
    });
    child.on('close', (code) => {
      if (code !== 0) {
        const tail = stderr.slice(-5).join(' | ') || 'no output';
        reject(new Error(`${python} ${args.join(' ')} exited with code ${code}: ${tail}`));
        return;
      }
      try {
        resolve(JSON.parse(stdout) as TorchBenchResult);
      } catch {
        reject(new Error(`torch_bench.py printed something that is not JSON: ${stdout.slice(0, 200)}`));
      }
    });
    child.stdin.on('error', () => {}); // the child may exit before reading (no torch); 'close' reports why
    child.stdin.end(JSON.stringify(opts.spec));
  });
}
