// Batched sampling with a KV cache, and a session that keeps the cache from one turn of a dialogue to the next.
//
// 1. Prefill: each prompt's new tokens are left-padded to a common length (rounded up to PROMPT_BUCKET) and run
//    through the model at once; every layer's keys/values (after RoPE) go into a cache [B, capacity, nKV*hd]
//    preallocated for the whole call, capacity = round_up(slots used + prompt block + maxNewTokens, CACHE_BUCKET).
//    A block too large for one pass (many rows x many tokens) runs in chunks of columns, each activation under
//    MAX_ACTIVATION_BYTES: WebGPU binds at most 2 GiB per buffer and wasm has 4 GiB in all.
// 2. Decode: one token per row per step, its key/value written into the next slot; the query attends over the
//    cache slots up to its own that hold real tokens. The attention of both is one fused kernel per layer
//    (cachedAttention, src/model/kernels), which on wasm and cpu writes into the cache in place; on wasm the whole
//    layer is one kernel (decodeLayer).
// 3. Next turn (GenerationSession): a multi-turn rollout's next prompt repeats the whole dialogue so far. The
//    session compares each row's new prompt with the tokens already in its cache (the previous prompt and the
//    sampled tokens) and prefills only what follows their longest common prefix; cache slots past it become
//    holes that nobody attends to. Positions count real tokens only, never slots, so a row's keys are exactly
//    those a full prefill of the same tokens would compute.
// 4. Shared prompts: rows that start from the same prompt with nothing cached (the members of an env group on their
//    first turn) run ONE prefill of it; its cache row and logits are copied to the others (stats.sharedTokens).
// Each layer's intermediates are freed as soon as the layer is done (Qwen2Model.stack), so a prefill holds one
// layer's activations at a time. The weights are stacked and transposed once per call (Qwen2Model.inferenceWeights), so each decode step's
// matmuls are plain products with the bias fused in.
// Why a fixed-size cache rather than concatenating a column per step: every decode step then has identical
// shapes, so WebGPU compiles its shaders once per (batch, prompt bucket, capacity) instead of once per step, and
// the buffer pool stays flat. The cost is attending over up to CACHE_BUCKET - 1 unused (masked) slots.
//
// Rows that finished (stop token, stop string) keep being fed padTokenId so the batch keeps its shape; their
// outputs are ignored and they cannot affect other rows (each row attends only to its own keys). This is the
// turn-by-turn engine (rollout.engine 'turns'): the capacity is recomputed per call and the cache re-taken (and
// grown) per turn, and a turn lasts as long as its longest row. continuousBatching.ts is the other engine
// ('continuous'): one cache sized once per rollout batch, and a row whose turn ends frees its place at once.
import * as tf from '@tensorflow/tfjs';
import { headDim } from './config';
import { embed } from './kernels/index';
import { disposeInferenceWeights, type InferenceWeights, type KvCache, type Qwen2Model } from './qwen2';
import { sampleNextTokens, sampleOnDevice, validateSamplingOptions } from './sampling';
import { mixSeed, seededUniform } from './seeded';
import { stopStringCheck } from './stopStrings';

/** Prompt lengths are padded up to a multiple of this (fewer distinct prefill shapes). */
export const PROMPT_BUCKET = 16;
/** KV-cache capacity is a multiple of this. */
export const CACHE_BUCKET = 64;
/**
 * A prefill's largest activation (the MLP's gate and up projections, [tokens, 2 x intermediate] float32) stays under
 * this: a quarter of WebGPU's 2 GiB storage-binding limit, and an eighth of wasm's 4 GiB memory.
 */
export const MAX_ACTIVATION_BYTES = 512 * 1024 ** 2;

export interface GenerateOptions {
  maxNewTokens: number; // per-turn token limit (RAGEN: 400 per turn for Qwen presets)
  temperature: number; // 0 = greedy; RAGEN rollouts 1.0, validation 0.5
  topP?: number; // nucleus sampling threshold (default 1 = off)
  topK?: number; // top-k (default off; 0 or -1 = off)
  stopTokenIds?: number[]; // e.g. <|im_end|>; the stop token is included in the output
  stopStrings?: string[]; // e.g. '</answer>': stop once the decoded new text contains it (needs decode)
  decode?: (ids: number[]) => string;
  seed: number; // same seed + same backend => same samples
  padTokenId: number; // left padding, and the filler for rows that already finished
  readEvery?: number; // read sampled ids back every n steps (default: 8 on webgpu, 1 elsewhere)
  /**
   * Largest activation a prefill may make, in bytes (default MAX_ACTIVATION_BYTES): a long prompt block over many rows
   * is prefilled in chunks of columns below it.
   */
  maxActivationBytes?: number;
  /**
   * Progress: awaited after every decode step with the tokens decoded so far per row (the longest row). Throwing
   * from it abandons the generation (every tensor is freed): a caller's Stop button lands between tokens.
   */
  onDecodeStep?: (decoded: number) => void | Promise<void>;
}

export interface GenerateResult {
  tokens: number[][]; // new tokens only, per prompt (stop token / stop string included)
  finishReasons: ('stop' | 'length')[];
}

const roundUp = (n: number, m: number) => Math.ceil(n / m) * m;

/** What the session remembers of one row: the tokens in its cache, in order, and the slot of each. */
interface CachedRow {
  key: number;
  tokens: number[];
  slots: number[];
}

/**
 * Generation over several calls that continue the same dialogues (the turns of one rollout batch), reusing each
 * row's KV cache. The model's weights must not change while a session is open. Rows are matched across calls by
 * `keys` (e.g. env ids); a row whose key is new, or a call without keys, starts from an empty cache. dispose() frees
 * the cache.
 */
export class GenerationSession {
  private cache: KvCache | null = null;
  private capacity = 0;
  private fill = 0; // the next free cache slot (the same for every row)
  private rows: CachedRow[] = [];
  /**
   * Prompt tokens served from the cache / prefilled / served by another row's prefill of the same prompt, and the
   * leading cache slots every row held alike (read from row 0 by the decode steps; layer 0's count), over the
   * session's calls (for benchmarks and tests).
   */
  readonly stats = { reusedTokens: 0, prefilledTokens: 0, sharedTokens: 0, alikeSlots: 0 };

  constructor(private readonly model: Qwen2Model) {}

  async generate(prompts: number[][], opts: GenerateOptions, keys?: readonly number[]): Promise<GenerateResult> {
    validate(this.model, prompts, opts);
    if (keys && keys.length !== prompts.length)
      throw new Error(`generate: ${keys.length} keys for ${prompts.length} prompts`);
    const model = this.model;
    const rows = prompts.length;
    const tokens: number[][] = prompts.map(() => []);
    const finishReasons: ('stop' | 'length')[] = prompts.map(() => 'length');
    if (opts.maxNewTokens === 0) return { tokens, finishReasons };

    // Which cached row each prompt continues, and how many of its leading tokens are in that row's cache. At least
    // the last prompt token is always run, for the logits of the first new token.
    const previous = new Map(this.rows.map((r, i) => [r.key, i]));
    const reuse = prompts.map((p, i) => {
      const from = keys ? previous.get(keys[i]) : undefined;
      if (from === undefined) return { from: -1, prefix: 0 };
      const cached = this.rows[from].tokens;
      const max = Math.min(cached.length, p.length - 1);
      let n = 0;
      while (n < max && cached[n] === p[n]) n++;
      return { from, prefix: n };
    });
    const reusing = reuse.some((r) => r.prefix > 0);
    const start = reusing ? this.fill : 0;
    const promptLen = roundUp(Math.max(...prompts.map((p, i) => p.length - reuse[i].prefix)), PROMPT_BUCKET);
    const capacity = Math.max(
      roundUp(start + promptLen + opts.maxNewTokens, CACHE_BUCKET),
      reusing ? this.capacity : 0,
    );
    // Rows with the same prompt and nothing cached (the members of an env group on their first turn: all reset with
    // the group's seed) share ONE prefill: only the first row of each distinct prompt runs through the model, and
    // its cache row and logits are then copied to the others. Their keys and values are what their own prefill
    // would compute (the same tokens at the same slots and positions, and no row attends to another).
    const prefillRow = prompts.map((_, r) => r);
    if (!reusing) {
      const firstWith = new Map<string, number>();
      prompts.forEach((p, r) => {
        const key = p.join(',');
        const first = firstWith.get(key);
        if (first === undefined) firstWith.set(key, r);
        else prefillRow[r] = first;
      });
    }
    const distinct = prefillRow.filter((f, r) => f === r); // the rows that are prefilled, in order
    const shared = distinct.length < rows;
    this.stats.reusedTokens += reuse.reduce((n, r) => n + r.prefix, 0);
    this.stats.prefilledTokens += distinct.reduce((n, r) => n + prompts[r].length - reuse[r].prefix, 0);
    this.stats.sharedTokens += prompts.reduce((n, p, r) => n + (prefillRow[r] === r ? 0 : p.length), 0);

    // Each row's visible slots: its reused prefix, then its new prompt tokens (left-padded into the block at
    // `start`), then (filled in step by step) its generated tokens.
    const visibleKeys = new Float32Array(rows * capacity);
    const idsData = new Int32Array(rows * promptLen).fill(opts.padTokenId);
    const positionData = new Int32Array(rows * promptLen);
    const nextRows: CachedRow[] = prompts.map((p, r) => {
      const { from, prefix } = reuse[r];
      const slots = prefix > 0 ? this.rows[from].slots.slice(0, prefix) : [];
      for (const slot of slots) visibleKeys[r * capacity + slot] = 1;
      const offset = promptLen - (p.length - prefix);
      for (let j = prefix; j < p.length; j++) {
        const col = offset + j - prefix;
        idsData[r * promptLen + col] = p[j];
        positionData[r * promptLen + col] = j;
        visibleKeys[r * capacity + start + col] = 1;
        slots.push(start + col);
      }
      return { key: keys ? keys[r] : r, tokens: [...p], slots };
    });
    const realLength = prompts.map((p) => p.length);
    // One random stream per row, keyed like the cache (env id): a row samples the same tokens whatever else is in
    // the batch, so a batch can be split across workers without changing a single token.
    const streams = prompts.map((_, r) => seededUniform(mixSeed(opts.seed, keys ? keys[r] : r)));
    const stopIds = new Set(opts.stopTokenIds ?? []);
    const reachedStopString = stopStringCheck(opts.stopStrings ?? [], opts.decode);
    const done = prompts.map(() => false);

    let unread: tf.Tensor1D[] = []; // sampled ids [B] the host has not read yet (see readEvery below)
    const weights = model.inferenceWeights();
    // Set once the prompts are in the cache: its leading slots that every row holds alike (the decode steps read them
    // from row 0; Qwen2Model.sharedCacheSlots).
    let sharedSlots: number[] | undefined;
    let cache = this.takeCache(
      reuse.map((r) => r.from),
      shared ? distinct.length : rows,
      capacity,
      reusing,
    );
    // Runs the stack on `ids` [n, T] at cache slots slot..slot+T-1 (n = rows, or the distinct rows of a shared
    // prefill, whose key masks are `masks`); returns the logits of each row's last position.
    // `logits` false: nothing is returned (an early chunk of a prefill).
    function advance(
      ids: tf.Tensor2D,
      positions: tf.Tensor1D,
      maxPosition: number,
      slot: number,
      masks?: Float32Array,
    ): tf.Tensor2D;
    function advance(
      ids: tf.Tensor2D,
      positions: tf.Tensor1D,
      maxPosition: number,
      slot: number,
      masks: Float32Array,
      logits: boolean,
    ): tf.Tensor2D | null;
    function advance(
      ids: tf.Tensor2D,
      positions: tf.Tensor1D,
      maxPosition: number,
      slot: number,
      masks: Float32Array = visibleKeys,
      logits = true,
    ): tf.Tensor2D | null {
      const n = ids.shape[0];
      const keyMask = tf.tensor2d(masks, [n, capacity]);
      try {
        const out = model.hiddenWithCache(ids, positions, maxPosition, keyMask, slot, cache, weights, sharedSlots);
        disposeCache(cache);
        cache = out.cache;
        const last = logits ? tf.tidy(() => lastPositionLogits(model, out.hidden, n, weights)) : null;
        out.hidden.dispose();
        return last;
      } finally {
        keyMask.dispose();
      }
    }
    // The prompt block of `n` rows (ids and positions [n, promptLen], row-major), run in chunks of columns small
    // enough that no activation passes opts.maxActivationBytes. Each chunk's keys go into the cache before the next
    // chunk attends to them (attention is causal by slot), so the result is the one-shot prefill's. Why: 128 rows
    // whose later turn re-reads 1,088 tokens made a 2.7 GB MLP activation, past WebGPU's 2 GiB binding limit (the
    // H100's Dawn ran the kernel on nothing, silently) and past wasm's 4 GiB memory.
    const prefill = (n: number, ids: Int32Array, positions: Int32Array, masks: Float32Array): tf.Tensor2D => {
      const columns = prefillChunkColumns(model, n, promptLen, opts.maxActivationBytes ?? MAX_ACTIVATION_BYTES);
      const maxPosition = Math.max(...realLength) - 1;
      let logits: tf.Tensor2D | null = null;
      for (let c0 = 0; c0 < promptLen; c0 += columns) {
        const c1 = Math.min(promptLen, c0 + columns);
        const cut = (data: Int32Array) => {
          if (c0 === 0 && c1 === promptLen) return data;
          const out = new Int32Array(n * (c1 - c0));
          for (let r = 0; r < n; r++) out.set(data.subarray(r * promptLen + c0, r * promptLen + c1), r * (c1 - c0));
          return out;
        };
        const chunk = [tf.tensor2d(cut(ids), [n, c1 - c0], 'int32'), tf.tensor1d(cut(positions), 'int32')] as const;
        try {
          logits = advance(chunk[0], chunk[1], maxPosition, start + c0, masks, c1 === promptLen);
        } finally {
          tf.dispose([...chunk]);
        }
      }
      return logits!;
    };
    let nextFree = start + promptLen;
    try {
      // Prefill the new prompt tokens (of the distinct prompts only, when rows share one; then copy to every row).
      let logits: tf.Tensor2D;
      if (shared) {
        const pick = <T extends Float32Array | Int32Array>(data: T, width: number, make: (n: number) => T): T => {
          const out = make(distinct.length * width);
          distinct.forEach((r, i) => out.set(data.subarray(r * width, (r + 1) * width), i * width));
          return out;
        };
        const prefilled = prefill(
          distinct.length,
          pick(idsData, promptLen, (n) => new Int32Array(n)),
          pick(positionData, promptLen, (n) => new Int32Array(n)),
          pick(visibleKeys, capacity, (n) => new Float32Array(n)),
        );
        const index = tf.tensor1d(
          prefillRow.map((r) => distinct.indexOf(r)),
          'int32',
        );
        try {
          logits = copyRows(prefilled, index);
          const spread = (t: tf.Tensor3D) => copyRows(t, index);
          const expanded: KvCache = { k: cache.k.map(spread), v: cache.v.map(spread) };
          disposeCache(cache);
          cache = expanded;
        } finally {
          tf.dispose([prefilled, index]);
        }
      } else {
        logits = prefill(rows, idsData, positionData, visibleKeys);
      }

      sharedSlots = model.sharedCacheSlots(cache, start + promptLen, weights);
      this.stats.alikeSlots += sharedSlots?.[0] ?? 0;

      // Sampled ids stay on the device and feed the next decode step directly; the host reads them (to find stop
      // tokens and strings) only every `readEvery` steps, because on WebGPU each read is a round trip that stalls
      // the queue. A row that stopped since the last read goes on decoding until the next one and what it produces
      // then is dropped; no row attends to another, so the kept tokens are exactly those of reading every step.
      const readEvery = opts.readEvery ?? (tf.getBackend() === 'webgpu' ? 8 : 1);
      for (let step = 0; ; step++) {
        const uniforms = streams.map((next) => next());
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
              if (stopIds.has(ids[r])) {
                done[r] = true;
                finishReasons[r] = 'stop';
                continue;
              }
              if (reachedStopString(tokens[r])) {
                done[r] = true;
                finishReasons[r] = 'stop';
                continue;
              }
              if (tokens[r].length >= opts.maxNewTokens) done[r] = true;
            }
          }
          tf.dispose(unread.filter((t) => t !== newest));
          unread = [];
          if (done.every(Boolean)) {
            newest.dispose();
            break;
          }
        }

        // Decode one token per row into the next slot (rows known to be done are fed padding).
        const slot = start + promptLen + step;
        nextFree = slot + 1;
        for (let r = 0; r < rows; r++) visibleKeys[r * capacity + slot] = done[r] ? 0 : 1;
        const anyDone = done.some(Boolean);
        logits = tf.tidy(() => {
          // While no row is known to be done the sampled ids go in as they are (two kernels fewer per step).
          const fed = anyDone
            ? tf.where(tf.tensor1d(done, 'bool'), tf.fill([rows], opts.padTokenId, 'int32'), newest)
            : newest;
          const ids = fed.reshape([rows, 1]) as tf.Tensor2D;
          const positions = tf.tensor1d(
            realLength.map((n) => n + step),
            'int32',
          );
          return advance(ids, positions, Math.max(...realLength) + step, slot);
        });
        if (!unread.includes(newest)) newest.dispose();
        if (opts.onDecodeStep) {
          try {
            await opts.onDecodeStep(step + 1);
          } catch (err) {
            logits.dispose();
            throw err;
          }
        }
      }
    } catch (err) {
      disposeCache(cache);
      this.cache = null;
      this.rows = [];
      throw err;
    } finally {
      disposeInferenceWeights(weights);
      tf.dispose(unread);
    }
    // Remember what each row's cache now holds: every kept token but the last was fed back at slot
    // start + promptLen + k (the last one may not have been, and tokens a row decoded past its stop were dropped).
    nextRows.forEach((row, r) => {
      const kept = tokens[r].length - 1;
      for (let k = 0; k < kept; k++) {
        row.tokens.push(tokens[r][k]);
        row.slots.push(start + promptLen + k);
      }
      row.tokens.length = row.slots.length; // the tokens the slots hold, in order
    });
    this.rows = nextRows;
    this.cache = cache;
    this.capacity = capacity;
    this.fill = nextFree;
    return { tokens, finishReasons };
  }

  /** The cache for this call's rows: rows gathered from the session's cache (when reusing) and padded to capacity. */
  private takeCache(from: number[], rows: number, capacity: number, reusing: boolean): KvCache {
    const c = this.model.config;
    const kw = c.num_key_value_heads * headDim(c);
    const old = this.cache;
    this.cache = null;
    if (!reusing || !old) {
      if (old) disposeCache(old);
      const fresh: KvCache = { k: [], v: [] };
      for (let l = 0; l < c.num_hidden_layers; l++) {
        fresh.k.push(tf.zeros([rows, capacity, kw]));
        fresh.v.push(tf.zeros([rows, capacity, kw]));
      }
      return fresh;
    }
    const index = tf.tensor1d(
      from.map((f) => Math.max(f, 0)),
      'int32',
    ); // a new row borrows row 0; it sees none of it
    const take = (t: tf.Tensor3D) =>
      tf.tidy(() => {
        const picked = copyRows(t, index);
        return (
          capacity > this.capacity
            ? tf.pad(picked, [
                [0, 0],
                [0, capacity - this.capacity],
                [0, 0],
              ])
            : picked
        ) as tf.Tensor3D;
      });
    try {
      return { k: old.k.map(take), v: old.v.map(take) };
    } finally {
      index.dispose();
      disposeCache(old);
    }
  }

  dispose(): void {
    if (this.cache) disposeCache(this.cache);
    this.cache = null;
    this.rows = [];
  }
}

/** One batch of prompts, no session: generation from an empty cache. */
export async function generate(model: Qwen2Model, prompts: number[][], opts: GenerateOptions): Promise<GenerateResult> {
  const session = new GenerationSession(model);
  try {
    return await session.generate(prompts, opts);
  } finally {
    session.dispose();
  }
}

/** t[index] along the first axis: whole rows copied with the embedding-lookup kernel (tfjs-wasm's GatherV2 is slow). */
export function copyRows<T extends tf.Tensor>(t: T, index: tf.Tensor1D): T {
  return tf.tidy(() => {
    const [n, ...rest] = t.shape;
    const width = rest.reduce((a, b) => a * b, 1);
    return embed(t.reshape([n, width]) as tf.Tensor2D, index).reshape([index.shape[0], ...rest]) as T;
  });
}

/** Columns of an n-row prompt block per prefill chunk: as many as keep the widest activation under maxBytes. */
export function prefillChunkColumns(model: Qwen2Model, n: number, promptLen: number, maxBytes: number): number {
  const c = model.config;
  const widest = Math.max(
    2 * c.intermediate_size,
    (c.num_attention_heads + 2 * c.num_key_value_heads) * headDim(c),
    c.hidden_size,
  );
  return Math.max(1, Math.min(promptLen, Math.floor(maxBytes / (n * widest * 4))));
}

/** Logits [B, V] of each row's last position (the LM head on every prompt position would be wasted work). */
export function lastPositionLogits(
  model: Qwen2Model,
  hidden: tf.Tensor2D,
  rows: number,
  weights: InferenceWeights,
): tf.Tensor2D {
  const t = hidden.shape[0] / rows;
  const last =
    t === 1
      ? hidden
      : hidden
          .reshape([rows, t, hidden.shape[1]])
          .slice([0, t - 1, 0], [rows, 1, hidden.shape[1]])
          .reshape([rows, hidden.shape[1]]);
  return model.head(last as tf.Tensor2D, weights) as tf.Tensor2D;
}

/** Frees every layer's keys and values. */
export function disposeCache(cache: KvCache): void {
  tf.dispose([...cache.k, ...cache.v]);
}

/** Throws, naming the problem, on prompts or options that generation cannot run (both engines check with it). */
export function validate(model: Qwen2Model, prompts: number[][], o: GenerateOptions): void {
  if (model.hasValueHead) throw new Error('generate: this model has a value head, not an LM head');
  if (!prompts.length) throw new Error('generate: no prompts given');
  if (o.maxActivationBytes !== undefined && !(o.maxActivationBytes > 0)) {
    throw new Error(`generate: maxActivationBytes must be a positive number of bytes, got ${o.maxActivationBytes}`);
  }
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
  // As vLLM refuses a prompt past max_model_len: positions beyond the model's are not something it was trained on.
  const longest = Math.max(...prompts.map((p) => p.length));
  if (longest + o.maxNewTokens > model.config.max_position_embeddings) {
    throw new Error(
      `generate: a prompt of ${longest} tokens plus up to ${o.maxNewTokens} new tokens needs more than the model's ` +
        `${model.config.max_position_embeddings} positions (max_position_embeddings)`,
    );
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
