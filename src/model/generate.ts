// Batched sampling with a KV cache.
//
// 1. Prefill: prompts are left-padded to a common length (rounded up to PROMPT_BUCKET) and run through the model
//    once; every layer's keys/values (after RoPE) go into a cache preallocated at its final size
//    [B, nKV, capacity, hd], capacity = round_up(prompt length + maxNewTokens, CACHE_BUCKET).
// 2. Decode: one token per row per step. The new key/value is written into slot (prompt length + step) and the
//    query attends over the whole cache, with unwritten slots and padding masked out.
// Why a fixed-size cache rather than concatenating a column per step: every decode step then has identical
// shapes, so WebGPU compiles its shaders once per (batch, prompt bucket, capacity) instead of once per step, and
// the buffer pool stays flat. The cost is attending over up to CACHE_BUCKET - 1 unused (masked) slots.
//
// Positions count real tokens only, so a left-padded row's first real token is at position 0, as in training.
// Rows that finished (stop token, stop string) keep being fed padTokenId so the batch keeps its shape; their
// outputs are ignored and they cannot affect other rows (each row attends only to its own keys).
import * as tf from '@tensorflow/tfjs';
import { headDim } from './config';
import { MASKED_SCORE, causalAttentionBias, positionsFromMask, type Qwen2Model } from './qwen2';
import { sampleNextTokens, sampleOnDevice, seededUniform, validateSamplingOptions } from './sampling';

/** Prompt lengths are padded up to a multiple of this (fewer distinct prefill shapes). */
export const PROMPT_BUCKET = 16;
/** KV-cache capacity is a multiple of this. */
export const CACHE_BUCKET = 64;

export interface GenerateOptions {
  maxNewTokens: number;          // per-turn token limit (RAGEN: 400 per turn for Qwen presets)
  temperature: number;           // 0 = greedy; RAGEN rollouts 1.0, validation 0.5
  topP?: number;                 // nucleus sampling threshold (default 1 = off)
  topK?: number;                 // top-k (default off; 0 or -1 = off)
  stopTokenIds?: number[];       // e.g. <|im_end|>; the stop token is included in the output
  stopStrings?: string[];        // e.g. '</answer>': stop once the decoded new text contains it (needs decode)
  decode?: (ids: number[]) => string;
  seed: number;                  // same seed + same backend => same samples
  padTokenId: number;            // left padding, and the filler for rows that already finished
  readEvery?: number;            // read sampled ids back every n steps (default: 8 on webgpu, 1 elsewhere)
  /**
   * Progress: awaited after every decode step with the tokens decoded so far per row (the longest row). Throwing
   * from it abandons the generation (every tensor is freed): a caller's Stop button lands between tokens.
   */
  onDecodeStep?: (decoded: number) => void | Promise<void>;
}

export interface GenerateResult {
  tokens: number[][];                       // new tokens only, per prompt (stop token / stop string included)
  finishReasons: ('stop' | 'length')[];
}

const roundUp = (n: number, m: number) => Math.ceil(n / m) * m;

export async function generate(model: Qwen2Model, prompts: number[][], opts: GenerateOptions): Promise<GenerateResult> {
  validate(model, prompts, opts);
  const rows = prompts.length;
  const tokens: number[][] = prompts.map(() => []);
  const finishReasons: ('stop' | 'length')[] = prompts.map(() => 'length');
  if (opts.maxNewTokens === 0) return { tokens, finishReasons };

  const c = model.config;
  const promptLen = roundUp(Math.max(...prompts.map((p) => p.length)), PROMPT_BUCKET);
  const capacity = roundUp(promptLen + opts.maxNewTokens, CACHE_BUCKET);
  const realLength = prompts.map((p) => p.length);
  const random = seededUniform(opts.seed);
  const stopIds = new Set(opts.stopTokenIds ?? []);
  const stopStrings = opts.stopStrings ?? [];
  // A stop string can only end in the newest token; decoding a short tail is enough to find it.
  const tailTokens = Math.max(0, ...stopStrings.map((s) => s.length)) + 8;
  const done = prompts.map(() => false);

  // Left-padded prompts, and which cache slots each row may attend to: its real prompt tokens, then (filled in
  // step by step) its generated tokens.
  const idsData = new Int32Array(rows * promptLen).fill(opts.padTokenId);
  const promptMask = new Float32Array(rows * promptLen);
  const visibleKeys = new Float32Array(rows * capacity);
  prompts.forEach((p, r) => {
    const offset = promptLen - p.length;
    p.forEach((id, j) => {
      idsData[r * promptLen + offset + j] = id;
      promptMask[r * promptLen + offset + j] = 1;
      visibleKeys[r * capacity + offset + j] = 1;
    });
  });

  let unread: tf.Tensor1D[] = [];   // sampled ids [B] the host has not read yet (see readEvery below)
  let cacheK: tf.Tensor4D[] = [];
  let cacheV: tf.Tensor4D[] = [];
  const nKV = c.num_key_value_heads, hd = headDim(c);
  try {
    // Prefill: the whole prompt at once; keep each layer's K/V, padded with empty slots up to the capacity.
    let logits = tf.tidy(() => {
      const ids = tf.tensor2d(idsData, [rows, promptLen], 'int32');
      const mask = tf.tensor2d(promptMask, [rows, promptLen]);
      const empty = tf.zeros([rows, nKV, capacity - promptLen, hd]);
      const hidden = model.hiddenStates(ids, positionsFromMask(mask), causalAttentionBias(mask), promptLen - 1,
        (layer, k, v) => {
          cacheK[layer] = tf.keep(tf.concat([k, empty], 2) as tf.Tensor4D);
          cacheV[layer] = tf.keep(tf.concat([v, empty], 2) as tf.Tensor4D);
          return { k, v };
        });
      return lastPositionLogits(model, hidden);
    });

    // Sampled ids stay on the device and feed the next decode step directly; the host reads them (to find stop
    // tokens and strings) only every `readEvery` steps, because on WebGPU each read is a round trip that stalls the
    // queue. A row that stopped since the last read goes on decoding until the next one and what it produces then
    // is dropped; no row attends to another, so the kept tokens are exactly those of reading every step.
    const readEvery = opts.readEvery ?? (tf.getBackend() === 'webgpu' ? 8 : 1);
    for (let step = 0; ; step++) {
      const uniforms = prompts.map(() => random());   // drawn for every row, so a row's stream ignores the others
      const onDevice = sampleOnDevice(logits, opts, uniforms);
      // Top-k / top-p finish on the CPU: those ids are on the host anyway, so they are read every step.
      const newest = onDevice ?? tf.tensor1d(await sampleNextTokens(logits, opts, uniforms), 'int32');
      logits.dispose();
      unread.push(newest);
      // Every row has step + 1 tokens unless it stopped, so the length limit needs no read.
      if (unread.length >= readEvery || step + 1 >= opts.maxNewTokens || !onDevice) {
        for (const ids of await Promise.all(unread.map((t) => t.data()))) {
          for (let r = 0; r < rows; r++) {
            if (done[r]) continue;
            tokens[r].push(ids[r]);
            if (stopIds.has(ids[r])) { done[r] = true; finishReasons[r] = 'stop'; continue; }
            if (stopStrings.length) {
              const tail = opts.decode!(tokens[r].slice(-tailTokens));
              if (stopStrings.some((s) => tail.includes(s))) { done[r] = true; finishReasons[r] = 'stop'; continue; }
            }
            if (tokens[r].length >= opts.maxNewTokens) done[r] = true;
          }
        }
        tf.dispose(unread.filter((t) => t !== newest));
        unread = [];
        if (done.every(Boolean)) { newest.dispose(); break; }
      }

      // Decode one token per row into slot promptLen + step (rows known to be done are fed padding).
      const slot = promptLen + step;
      for (let r = 0; r < rows; r++) visibleKeys[r * capacity + slot] = done[r] ? 0 : 1;
      const newK: tf.Tensor4D[] = [], newV: tf.Tensor4D[] = [];
      logits = tf.tidy(() => {
        const rowDone = tf.tensor1d(done, 'bool');
        const ids = tf.where(rowDone, tf.fill([rows], opts.padTokenId, 'int32'), newest).reshape([rows, 1]);
        const positions = tf.tensor2d(realLength.map((n) => n + step), [rows, 1], 'int32');
        const bias = decodeBias(visibleKeys, rows, capacity);
        // Write the new K/V into the slot as a blend, cache·(1 − onehot) + fresh·onehot: exact (×1 and +0 change
        // nothing), and ~30x faster on wasm than tf.where with a broadcast condition (520 ms vs 17 ms per call for a
        // [64, 2, 256, 32] cache). (oneHot's dtype argument is broken on wasm 4.22, hence toFloat().)
        const slotOneHot = tf.oneHot(tf.tensor1d([slot], 'int32'), capacity).toFloat().reshape([1, 1, capacity, 1]);
        const keepOld = tf.sub(1, slotOneHot);
        const write = (cache: tf.Tensor4D, fresh: tf.Tensor4D) =>
          cache.mul(keepOld).add(fresh.mul(slotOneHot)) as tf.Tensor4D;   // fresh [B, nKV, 1, hd] broadcasts over slots
        const hidden = model.hiddenStates(ids as tf.Tensor2D, positions, bias, Math.max(...realLength) + step, (layer, k, v) => {
          newK[layer] = tf.keep(write(cacheK[layer], k));
          newV[layer] = tf.keep(write(cacheV[layer], v));
          return { k: newK[layer], v: newV[layer] };
        });
        return lastPositionLogits(model, hidden);
      });
      if (!unread.includes(newest)) newest.dispose();
      tf.dispose([...cacheK, ...cacheV]);
      cacheK = newK;
      cacheV = newV;
      if (opts.onDecodeStep) {
        try {
          await opts.onDecodeStep(step + 1);
        } catch (err) {
          logits.dispose();
          throw err;
        }
      }
    }
  } finally {
    tf.dispose([...cacheK, ...cacheV, ...unread]);
  }
  return { tokens, finishReasons };
}

/** Logits [B, V] of the last position only (the LM head on every prompt position would be wasted work). */
function lastPositionLogits(model: Qwen2Model, hidden: tf.Tensor3D): tf.Tensor2D {
  const [b, t, h] = hidden.shape;
  const logits = model.head(hidden.slice([0, t - 1, 0], [b, 1, h]));
  return logits.reshape([b, model.config.vocab_size]) as tf.Tensor2D;
}

/** Attention bias [B, 1, 1, capacity] for the newest query: it sees every slot written so far (which includes
 *  its own, just written), real prompt tokens included, padding and unwritten slots excluded. */
function decodeBias(visibleKeys: Float32Array, rows: number, capacity: number): tf.Tensor4D {
  const bias = new Float32Array(rows * capacity);
  for (let i = 0; i < rows * capacity; i++) bias[i] = visibleKeys[i] ? 0 : MASKED_SCORE;
  return tf.tensor4d(bias, [rows, 1, 1, capacity]);
}

function validate(model: Qwen2Model, prompts: number[][], o: GenerateOptions): void {
  if (model.hasValueHead) throw new Error('generate: this model has a value head, not an LM head');
  if (!prompts.length) throw new Error('generate: no prompts given');
  const vocab = model.config.vocab_size;
  prompts.forEach((p, i) => {
    if (!p.length) throw new Error(`generate: prompt ${i} is empty`);
    for (const id of p) {
      if (!Number.isInteger(id) || id < 0 || id >= vocab) {
        throw new Error(`generate: prompt ${i} has token id ${id} outside the vocabulary [0, ${vocab})`);
      }
    }
  });
  if (!Number.isInteger(o.maxNewTokens) || o.maxNewTokens < 0) {
    throw new Error(`generate: maxNewTokens must be an integer >= 0, got ${o.maxNewTokens}`);
  }
  if (!Number.isInteger(o.padTokenId) || o.padTokenId < 0 || o.padTokenId >= vocab) {
    throw new Error(`generate: padTokenId ${o.padTokenId} is outside the vocabulary [0, ${vocab})`);
  }
  if (o.readEvery !== undefined && !(Number.isInteger(o.readEvery) && o.readEvery >= 1)) {
    throw new Error(`generate: readEvery must be an integer >= 1, got ${o.readEvery}`);
  }
  if (!Number.isFinite(o.seed)) throw new Error(`generate: seed must be a number, got ${o.seed}`);
  if (o.stopStrings?.length && !o.decode) throw new Error('generate: stopStrings need a decode function');
  validateSamplingOptions(o);
}
