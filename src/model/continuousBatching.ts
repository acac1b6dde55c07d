// Continuous batching (rollout.engine 'continuous'): the dialogues of one rollout batch played as an inference engine
// plays them, each at its own pace, in a fixed number of batch rows ("slots").
//
// - One KV cache [slots, capacity, nKV*hd] per layer, allocated once per run (one rollout batch, i.e. one training
//   step) with the capacity the caller sized from the agent format's limits; every step of the run writes into it.
//   It never grows between turns; it is only copied into one of fewer rows (idle rows, see Rows) or compacted into
//   one of the same size (see Columns).
// - Two kinds of forward pass, over every row at once (the cache kernel writes the same columns of every row:
//   src/model/kernels cachedAttention):
//   a decode step of shape [slots, 1], one cache column: each row feeds the token it sampled last (decoding), the
//   next token of its new prompt text (see below), or padding that nobody attends to (an idle slot);
//   a prefill pass of shape [slots, T], T columns: when no row is decoding (the first prompts, or every dialogue's
//   turn ended at the same step, as when no answer stops before maxNewTokens), every row's new prompt tokens,
//   left-padded to a multiple of PROMPT_BUCKET, in chunks under maxActivationBytes (as generate.ts). In the first
//   pass, rows with the same prompt (an env group's first turn) share one prefill, as in generate.ts.
// - When a dialogue's turn ends (a stop token, a stop string such as `</answer>`, or its per-turn token budget),
//   `onTurnEnd` is awaited at once, with no other row waiting for it: the caller steps that dialogue's env and
//   answers with its next prompt (the whole dialogue so far) or null when the dialogue is over. The row keeps the
//   longest common prefix of its cache and the new prompt (as GenerationSession does across turns); the rest is
//   its new prompt text. A dialogue that is over frees its slot for the next waiting dialogue (there are waiting
//   ones when slots < dialogues), whose first prompt is the new text of the now empty row.
// - Why new prompt text next to decoding rows goes in one token a step rather than in a pass of its own: a pass for
//   the admitted rows alone would write into copies of their cache rows (a copy of the cache per admission), and a
//   pass of all rows with T columns costs slots x T token rows for a few real ones while the decoding rows wait.
//   Fed into the decode step, a prompt token costs no extra work (the row is in the step anyway), every step keeps
//   its shapes (WebGPU compiles its shaders once), and the admitted row just takes as many steps as its new text
//   has tokens.
// - Columns: the run writes column 0, 1, 2, ... in order. A row attends only to the columns its mask marks as its
//   dialogue's, which a row's keys always are in the order of their positions, so a row's attention sums the same
//   keys in the same order as generate.ts's. The columns a dialogue left (a previous occupant of the slot, a turn's
//   dropped suffix) are holes. When the next column would pass the capacity, the cache is compacted: each row's
//   live columns move to its front, in order (a row copy into a new cache of the same size; stats.compactions),
//   and the run continues after the longest row. A capacity sized from the format's limits (continuousCapacity)
//   leaves compaction to runs with fewer slots than dialogues, whose rows collect the holes of several dialogues.
// - Results: every dialogue draws its samples from its own random stream, mixSeed(seedForTurn(turn), key), one
//   uniform per sampled token, exactly the stream GenerationSession gives the same dialogue in the same turn (its
//   seed for that call, its key). On cpu a row's numbers depend neither on the other rows nor on the columns its
//   keys sit in (the kernels sum over keys one at a time, in order), so a dialogue samples bit for bit the tokens it
//   samples alone or turn by turn. wasm's attention kernel adds its keys four columns at a time, so there a key's
//   column can change the last bits of a sum, and then, now and then, a sampled token: the small tests see the same
//   tokens on both (tests/unit/model/continuous-batching.test.ts), but a tiny random model with Qwen's 151,936-token
//   vocabulary sampled a different token on wasm after a few turns; only cpu is exact by construction
//   (tests/unit/starpo/rollout-engine-qwen.test.ts). WebGPU may differ in float rounding too. Each engine is
//   deterministic on its own (same seed, backend and engine: same rollouts). That is why 'turns' stays the default.
// - Rows: a dialogue that is over frees its row for the next waiting one; once nobody waits and at least half the
//   rows are idle, the batch drops its idle rows (the cache copied into one of fewer rows, stats.shrinks), as a
//   turn-by-turn rollout leaves the envs that are done out of its next turn.
// - Reads: the sampled ids stay on the device and feed the next decode step; the host reads them every `readEvery`
//   passes (default: 8 on WebGPU, 1 elsewhere, as GenerationSession), so a turn that ends is seen up to 7 steps
//   late on WebGPU (its row decodes on meanwhile; what it samples then is dropped).
import * as tf from '@tensorflow/tfjs';
import { headDim } from './config';
import {
  CACHE_BUCKET,
  MAX_ACTIVATION_BYTES,
  PROMPT_BUCKET,
  copyRows,
  disposeCache,
  lastPositionLogits,
  prefillChunkColumns,
  validate,
  type GenerateOptions,
} from './generate';
import { disposeInferenceWeights, type KvCache, type Qwen2Model } from './qwen2';
import { sampleNextTokens, sampleOnDevice } from './sampling';
import { mixSeed, seededUniform } from './seeded';
import { stopStringCheck } from './stopStrings';

/** A dialogue to play: its key (env id: the key of its random streams) and its first prompt. */
export interface EngineDialogue {
  key: number;
  prompt: number[];
}

/** How one turn of a dialogue ended: its new tokens (stop token / stop string included) and why it stopped. */
export interface EngineTurn {
  tokens: number[];
  finishReason: 'stop' | 'length';
}

/**
 * Called when turn `turn` (1-based) of dialogue `key` ends: the dialogue's next prompt (the whole dialogue so far),
 * or null when the dialogue is over. A throw abandons the run (every tensor is freed).
 */
export type OnTurnEnd = (key: number, turn: number, result: EngineTurn) => number[] | null | Promise<number[] | null>;

export interface ContinuousOptions extends Omit<GenerateOptions, 'seed' | 'onDecodeStep'> {
  /** Batch rows: at most this many dialogues are played at once (the others wait for a free one). */
  slots: number;
  /** Cache columns per row, fixed for the run (rounded up to CACHE_BUCKET); continuousCapacity() sizes it. */
  capacity: number;
  /** Sampling seed of turn `turn` (1-based): a dialogue's stream in that turn is mixSeed(seedForTurn(turn), key). */
  seedForTurn: (turn: number) => number;
  /**
   * Progress: awaited after every forward pass with the tokens sampled (and read) so far by all dialogues; a throw
   * abandons the run.
   */
  onStep?: (sampled: number) => void | Promise<void>;
}

/** What a run did (benchmarks and tests). */
export interface EngineStats {
  /** Decode steps (shape [slots, 1]) and prefill passes (every playing row's new prompt tokens at once). */
  steps: number;
  passes: number;
  /** KV caches of [slots, capacity] allocated: 1 per run, plus 1 per compaction. */
  cacheAllocations: number;
  compactions: number;
  /** Times the batch dropped its idle rows (the cache copied into one of fewer rows), and the rows at the end. */
  shrinks: number;
  rows: number;
  /** The cache's columns per row at the end of the run (the capacity asked for unless a dialogue outgrew it). */
  capacity: number;
  /** Prompt tokens prefilled in passes / fed one per step / kept from the cache / served by a shared prefill. */
  prefilledTokens: number;
  fedTokens: number;
  reusedTokens: number;
  sharedTokens: number;
  /** Tokens sampled, and the turns played, by all dialogues. */
  sampledTokens: number;
  turns: number;
}

/**
 * Cache columns per row for dialogues of at most `maxTurn` turns: the longest first prompt, `maxTurn` answers of
 * `maxNewTokens`, and `maxTurn - 1` prompt growths of at most `turnGrowth` tokens each (the end of an answer, the
 * env's next observation and the next turn's header; by default as many as the longest first prompt, which holds
 * the instructions and an observation), rounded up to CACHE_BUCKET and at most the model's positions.
 */
export function continuousCapacity(
  model: Qwen2Model,
  firstPromptTokens: number,
  maxTurn: number,
  maxNewTokens: number,
  turnGrowth = firstPromptTokens,
): number {
  const need = firstPromptTokens + maxTurn * maxNewTokens + (maxTurn - 1) * turnGrowth;
  return roundUp(Math.min(need, model.config.max_position_embeddings), CACHE_BUCKET);
}

const roundUp = (n: number, m: number) => Math.ceil(n / m) * m;
/** In a row's `cached` tokens: a sample fed from the device, not read yet. */
const UNREAD = -1;

/** One batch row: the dialogue it plays (null: idle) and what its cache holds. */
interface Slot {
  key: number | null;
  turn: number;
  /** Prompt tokens still to feed, one a step; the last of them gives the turn's first sample. */
  pending: number[];
  /** Tokens sampled this turn. */
  tokens: number[];
  /** The dialogue's tokens in this row's cache, in order, and the column of each. */
  cached: number[];
  columns: number[];
  /** The turn's random stream. */
  stream: () => number;
}

/** Plays dialogues with continuous batching (see the header). The model's weights must not change during a run. */
export class ContinuousEngine {
  constructor(private readonly model: Qwen2Model) {}

  async run(dialogues: readonly EngineDialogue[], onTurnEnd: OnTurnEnd, opts: ContinuousOptions): Promise<EngineStats> {
    const model = this.model;
    validate(
      model,
      dialogues.map((d) => d.prompt),
      { ...opts, seed: 0 },
    );
    if (new Set(dialogues.map((d) => d.key)).size !== dialogues.length)
      throw new Error('ContinuousEngine: two dialogues share a key');
    if (!(Number.isInteger(opts.slots) && opts.slots >= 1))
      throw new Error(`ContinuousEngine: slots must be an integer >= 1, got ${opts.slots}`);
    let rows = Math.min(opts.slots, dialogues.length);
    const waiting = dialogues.slice(rows);
    let capacity = roundUp(
      Math.max(opts.capacity, ...dialogues.slice(0, rows).map((d) => d.prompt.length + 1)),
      CACHE_BUCKET,
    );
    const stats: EngineStats = {
      steps: 0,
      passes: 0,
      shrinks: 0,
      rows,
      cacheAllocations: 0,
      compactions: 0,
      capacity,
      prefilledTokens: 0,
      fedTokens: 0,
      reusedTokens: 0,
      sharedTokens: 0,
      sampledTokens: 0,
      turns: 0,
    };
    if (opts.maxNewTokens === 0) throw new Error('ContinuousEngine: maxNewTokens must be at least 1');
    const stopIds = new Set(opts.stopTokenIds ?? []);
    const reachedStopString = stopStringCheck(opts.stopStrings ?? [], opts.decode);
    const streamOf = (key: number, turn: number) => seededUniform(mixSeed(opts.seedForTurn(turn), key));
    let slots: Slot[] = dialogues.slice(0, rows).map((d) => ({
      key: d.key,
      turn: 1,
      pending: [...d.prompt],
      tokens: [],
      cached: [],
      columns: [],
      stream: streamOf(d.key, 1),
    }));
    let position = new Array<number>(rows).fill(0); // each row's next position
    let visible: Float32Array = new Float32Array(rows * capacity); // [rows, capacity]: which columns each row attends to

    const c = model.config;
    const kw = c.num_key_value_heads * headDim(c);
    const weights = model.inferenceWeights();
    let cache: KvCache | null = null;
    let logits: tf.Tensor2D | null = null;
    let column = 0; // the next column to write
    // Runs ids [n, T] at columns column..column+T-1 of `cache`; the logits of each row's last position, if asked.
    // `ids` on the device is taken over (disposed here).
    const advance = (
      ids: Int32Array | tf.Tensor2D,
      positions: Int32Array,
      n: number,
      masks: Float32Array,
      withLogits: boolean,
    ): tf.Tensor2D | null => {
      const idsT = ids instanceof Int32Array ? tf.tensor2d(ids, [n, ids.length / n], 'int32') : ids;
      const posT = tf.tensor1d(positions, 'int32');
      const maskT = tf.tensor2d(masks, [n, capacity]);
      try {
        const out = model.hiddenWithCache(
          idsT,
          posT,
          positions.reduce((a, b) => Math.max(a, b), 0),
          maskT,
          column,
          cache!,
          weights,
        );
        disposeCache(cache!);
        cache = out.cache;
        const last = withLogits ? tf.tidy(() => lastPositionLogits(model, out.hidden, n, weights)) : null;
        out.hidden.dispose();
        return last;
      } finally {
        tf.dispose([idsT, posT, maskT]);
      }
    };
    // Makes room for `width` more columns: compaction when the columns run out.
    const ensureColumns = (width: number) => {
      if (column + width <= capacity) return;
      const compacted = compact(cache!, slots, rows, capacity, width);
      ({ cache, capacity, visible, column } = compacted);
      stats.compactions++;
      stats.cacheAllocations++;
      stats.capacity = capacity;
    };
    // A prefill pass: every playing row's pending prompt tokens, left-padded to a common width (a multiple of
    // PROMPT_BUCKET) at the next columns, in chunks of columns under maxActivationBytes (as generate.ts). The first
    // pass, into an empty cache, prefills each distinct prompt once and copies its rows (an env group's first turn).
    const prefillPass = (): tf.Tensor2D => {
      const width = roundUp(Math.max(...slots.map((s) => s.pending.length)), PROMPT_BUCKET);
      const first = cache === null;
      if (!first) ensureColumns(width);
      const runs = slots.map((_, r) => r); // the row whose prefill each row takes
      if (first) {
        const firstWith = new Map<string, number>();
        slots.forEach((s, r) => {
          const text = s.pending.join(',');
          const at = firstWith.get(text);
          if (at === undefined) firstWith.set(text, r);
          else runs[r] = at;
        });
      }
      const distinct = runs.filter((f, r) => f === r);
      const n = distinct.length;
      const ids = new Int32Array(n * width).fill(opts.padTokenId);
      const positions = new Int32Array(n * width);
      slots.forEach((slot, r) => {
        const offset = width - slot.pending.length;
        const i = distinct.indexOf(runs[r]);
        slot.pending.forEach((token, j) => {
          if (runs[r] === r) {
            ids[i * width + offset + j] = token;
            positions[i * width + offset + j] = position[r] + j;
          }
          visible[r * capacity + column + offset + j] = 1;
          slot.cached.push(token);
          slot.columns.push(column + offset + j);
        });
        if (runs[r] === r) stats.prefilledTokens += slot.pending.length;
        else stats.sharedTokens += slot.pending.length;
        position[r] += slot.pending.length;
        slot.pending = [];
      });
      const masks = n === rows ? visible : pickRows(visible, distinct, capacity);
      if (first) cache = emptyCache(c.num_hidden_layers, n, capacity, kw);
      const chunk = prefillChunkColumns(model, n, width, opts.maxActivationBytes ?? MAX_ACTIVATION_BYTES);
      let out: tf.Tensor2D | null = null;
      for (let c0 = 0; c0 < width; c0 += chunk) {
        const c1 = Math.min(width, c0 + chunk);
        const cut = (data: Int32Array) => {
          const part = new Int32Array(n * (c1 - c0));
          for (let i = 0; i < n; i++) part.set(data.subarray(i * width + c0, i * width + c1), i * (c1 - c0));
          return part;
        };
        out = advance(cut(ids), cut(positions), n, masks, c1 === width);
        column += c1 - c0;
      }
      if (n < rows) {
        // Every row from its prompt's prefill: the cache of `rows` rows is made here.
        const index = tf.tensor1d(
          runs.map((r) => distinct.indexOf(r)),
          'int32',
        );
        const prefilled = cache!;
        const spread = (t: tf.Tensor3D) => copyRows(t, index);
        cache = { k: prefilled.k.map(spread), v: prefilled.v.map(spread) };
        const spreadLogits = copyRows(out!, index);
        tf.dispose([out!, index]);
        disposeCache(prefilled);
        out = spreadLogits;
      }
      if (first) stats.cacheAllocations++;
      stats.passes++;
      return out!;
    };

    // Sampled ids [rows] the host has not read yet, one per forward pass, with the rows that sampled in it. They stay
    // on the device and feed the next decode step directly; the host reads them every `readEvery` passes (on WebGPU
    // each read is a round trip that stalls the queue), when a row reaches maxNewTokens, or after host-side
    // sampling (top-k / top-p). A row whose turn ended since the last read goes on decoding until the next one:
    // what it samples then is dropped, and what it fed is in its cache under the tokens it fed (`cached`, filled in
    // at the read), so the next turn keeps it only as far as it matches the new prompt.
    let unread: { ids: tf.Tensor1D; sampling: boolean[] }[] = [];
    const readEvery = opts.readEvery ?? (tf.getBackend() === 'webgpu' ? 8 : 1);
    let drawn = new Array<number>(rows).fill(0); // samples drawn this turn per row, read or not
    let lastSample = new Array<number>(rows).fill(opts.padTokenId); // each row's newest read sample
    // Drops the idle rows once at least half the rows are idle and nobody waits for one (dialogues that ended early):
    // the cache of the playing rows is copied into one of that many rows, so that the steps left cost what the
    // dialogues still playing need (as a turn-by-turn rollout leaves its finished envs out of the next turn). Only
    // between reads: the unread samples are indexed by row.
    const shrink = () => {
      const live = slots.flatMap((s, r) => (s.key === null ? [] : [r]));
      const index = tf.tensor1d(live, 'int32');
      const old = cache!;
      try {
        const take = (t: tf.Tensor3D) => copyRows(t, index);
        cache = { k: old.k.map(take), v: old.v.map(take) };
      } finally {
        index.dispose();
        disposeCache(old);
      }
      visible = pickRows(visible, live, capacity);
      [slots, position, drawn, lastSample] = [slots, position, drawn, lastSample].map((a) => live.map((r) => a[r])) as [
        Slot[],
        number[],
        number[],
        number[],
      ];
      rows = live.length;
      stats.shrinks++;
      stats.rows = rows;
    };
    try {
      let sampling = slots.map(() => false); // rows whose logits from the last forward pass are a sample
      for (;;) {
        if (logits) {
          const uniforms = slots.map((s, r) => (sampling[r] ? s.stream() : 0));
          const onDevice = sampleOnDevice(logits, opts, uniforms);
          const ids = onDevice ?? tf.tensor1d(await sampleNextTokens(logits, opts, uniforms), 'int32');
          logits.dispose();
          logits = null;
          unread.push({ ids, sampling });
          for (let r = 0; r < rows; r++) if (sampling[r]) drawn[r]++;
          const full = sampling.some((s, r) => s && drawn[r] >= opts.maxNewTokens);
          if (unread.length >= readEvery || !onDevice || full) await readSamples();
        }
        const playing = slots.filter((s) => s.key !== null);
        if (!playing.length) break;
        if (!unread.length && !waiting.length && playing.length <= rows / 2) shrink();

        if (playing.every((s) => s.pending.length > 0)) {
          // Nobody is decoding (the first prompts; every dialogue's turn ended at the same step): one prefill pass.
          logits = prefillPass();
          sampling = slots.map((s) => s.key !== null);
        } else {
          // One decode step: each playing row feeds its next prompt token or its last sample at the next column
          // (from the device when that sample is not read yet: its place in `cached` is filled in at the read).
          ensureColumns(1);
          const feed = new Int32Array(rows).fill(opts.padTokenId);
          const fromDevice = new Array<boolean>(rows).fill(false);
          const feedPositions = new Int32Array(rows);
          sampling = slots.map((slot, r) => {
            visible[r * capacity + column] = 0;
            if (slot.key === null) return false;
            let token: number;
            if (slot.pending.length) {
              token = slot.pending.shift()!;
              stats.fedTokens++;
            } else if (unread.length) {
              token = UNREAD;
              fromDevice[r] = true;
            } else token = lastSample[r];
            feed[r] = token === UNREAD ? opts.padTokenId : token;
            feedPositions[r] = position[r]++;
            visible[r * capacity + column] = 1;
            slot.cached.push(token);
            slot.columns.push(column);
            return slot.pending.length === 0;
          });
          const newest = unread.length ? unread[unread.length - 1].ids : null;
          // Every row decoding from the device (a plain decode step): its samples go in as they are (two kernels fewer).
          const fed = !fromDevice.some(Boolean)
            ? feed
            : (tf.tidy(() =>
                (fromDevice.every(Boolean)
                  ? newest!
                  : tf.where(tf.tensor1d(fromDevice, 'bool'), newest!, tf.tensor1d(feed, 'int32'))
                ).reshape([rows, 1]),
              ) as tf.Tensor2D);
          logits = advance(fed, feedPositions, rows, visible, true);
          column++;
          stats.steps++;
        }
        await opts.onStep?.(stats.sampledTokens);
      }
      return stats;
    } finally {
      tf.dispose(unread.map((u) => u.ids));
      tf.dispose(logits ?? []);
      if (cache) disposeCache(cache);
      disposeInferenceWeights(weights);
    }

    // Reads the unread samples, in order: each sampling row's tokens until its turn ends (the rest is dropped), the
    // samples it fed in its cache, then the end of every turn that ended (onTurnEnd, and the row's next input).
    async function readSamples(): Promise<void> {
      const values = await Promise.all(unread.map((u) => u.ids.data()));
      const samples: number[][] = slots.map(() => []);
      const ended: (EngineTurn['finishReason'] | null)[] = slots.map(() => null);
      unread.forEach((u, i) => {
        u.sampling.forEach((sampled, r) => {
          if (!sampled) return;
          const id = values[i][r];
          samples[r].push(id);
          if (ended[r]) return;
          slots[r].tokens.push(id);
          stats.sampledTokens++;
          ended[r] = turnEnded(slots[r].tokens, id);
        });
      });
      tf.dispose(unread.map((u) => u.ids));
      unread = [];
      slots.forEach((slot, r) => {
        let k = 0;
        for (let i = 0; i < slot.cached.length; i++) if (slot.cached[i] === UNREAD) slot.cached[i] = samples[r][k++];
        if (samples[r].length) lastSample[r] = samples[r][samples[r].length - 1];
      });
      for (let r = 0; r < rows; r++) {
        const reason = ended[r];
        if (reason) await endTurn(r, reason);
      }
    }

    // The end of row r's turn: the caller's next prompt for its dialogue, or the next waiting dialogue.
    async function endTurn(r: number, reason: EngineTurn['finishReason']): Promise<void> {
      const slot = slots[r];
      stats.turns++;
      drawn[r] = 0;
      const next = await onTurnEnd(slot.key!, slot.turn, { tokens: slot.tokens, finishReason: reason });
      if (next) {
        validate(model, [next], { ...opts, seed: 0 });
        // Keep the longest common prefix of the row's cache and the new prompt (at least its last token is fed, for
        // the logits of the next turn's first sample); the columns past it become holes.
        let keep = 0;
        const max = Math.min(slot.cached.length, next.length - 1);
        while (keep < max && slot.cached[keep] === next[keep]) keep++;
        for (const col of slot.columns.slice(keep)) visible[r * capacity + col] = 0;
        slot.cached.length = keep;
        slot.columns.length = keep;
        stats.reusedTokens += keep;
        slot.turn++;
        slot.pending = next.slice(keep);
        position[r] = keep;
      } else {
        for (const col of slot.columns) visible[r * capacity + col] = 0;
        const admitted = waiting.shift();
        slot.key = admitted?.key ?? null;
        slot.turn = 1;
        slot.pending = admitted ? [...admitted.prompt] : [];
        slot.cached = [];
        slot.columns = [];
        position[r] = 0;
      }
      slot.tokens = [];
      if (slot.key !== null) slot.stream = streamOf(slot.key, slot.turn);
    }

    function turnEnded(tokens: number[], newest: number): EngineTurn['finishReason'] | null {
      if (stopIds.has(newest)) return 'stop';
      if (reachedStopString(tokens)) return 'stop';
      return tokens.length >= opts.maxNewTokens ? 'length' : null;
    }
  }
}

/** Rows `picked` of a [rows, width] row-major matrix. */
function pickRows(data: Float32Array, picked: number[], width: number): Float32Array {
  const out = new Float32Array(picked.length * width);
  picked.forEach((r, i) => out.set(data.subarray(r * width, (r + 1) * width), i * width));
  return out;
}

function emptyCache(layers: number, rows: number, capacity: number, kw: number): KvCache {
  const cache: KvCache = { k: [], v: [] };
  for (let l = 0; l < layers; l++) {
    cache.k.push(tf.zeros([rows, capacity, kw]));
    cache.v.push(tf.zeros([rows, capacity, kw]));
  }
  return cache;
}

/**
 * Moves each row's live columns to the front of its row, in order (one row copy per cache tensor), so that the run
 * can go on writing; the capacity grows only if a row's live columns fill it. Returns the new cache, its capacity,
 * the masks and the next column to write (after the longest row).
 */
function compact(
  old: KvCache,
  slots: Slot[],
  rows: number,
  capacity: number,
  width: number,
): { cache: KvCache; capacity: number; visible: Float32Array; column: number } {
  const longest = Math.max(...slots.map((s) => s.columns.length));
  const next = Math.max(capacity, roundUp(longest + width, CACHE_BUCKET));
  const index = new Int32Array(rows * next); // into the old cache's [rows x capacity] key rows
  const visible = new Float32Array(rows * next);
  slots.forEach((slot, r) => {
    index.fill(r * capacity, r * next, (r + 1) * next); // a hole: any row of its own
    slot.columns.forEach((col, j) => {
      index[r * next + j] = r * capacity + col;
      visible[r * next + j] = 1;
    });
    slot.columns = slot.columns.map((_, j) => j);
  });
  const indexT = tf.tensor1d(index, 'int32');
  try {
    // Whole key rows copied with the embedding-lookup kernel (copyRows); tfjs-wasm's gather with batchDims mixes rows.
    const gather = (t: tf.Tensor3D) =>
      tf.tidy(() => {
        const [, , kw] = t.shape;
        return copyRows(t.reshape([rows * capacity, kw]) as tf.Tensor2D, indexT).reshape([
          rows,
          next,
          kw,
        ]) as tf.Tensor3D;
      });
    return { cache: { k: old.k.map(gather), v: old.v.map(gather) }, capacity: next, visible, column: longest };
  } finally {
    indexT.dispose();
    disposeCache(old);
  }
}
