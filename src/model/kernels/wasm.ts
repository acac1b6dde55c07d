// The fused kernels on tfjs's wasm backend: thin wrappers that hand tensor addresses to the C kernels of
// wasm/kernels.c (compiled by scripts/build-kernels.sh for SIMD128 and for relaxed SIMD, both embedded in
// wasm/module.ts; compileWasmKernels picks one).
//
// The C module is instantiated with tfjs-wasm's own WebAssembly.Memory, so kernels read inputs and write outputs in
// place on tfjs's heap: no copies. A tensor's address is its `memoryOffset` in the backend's data map; outputs are
// allocated with `backend.makeOutput`, scratch space likewise and freed at once.
//
// The KV-cache kernels (cachedAttention, decodeLayer) write the new keys and values into the cache tensors they are
// given and return them as
// outputs that share their data (the way tfjs's own Reshape kernel shares data, with a reference count). That breaks
// tfjs's "tensors are immutable" rule for those two tensors on purpose: generate.ts creates the caches, never shares
// them, and drops the input cache as soon as the kernel returns. Copying the whole cache at every decoded token would
// cost more than the attention itself.
//
// The AdamW kernel writes the new weights and moments in place too. tfjs-wasm caches, per tensor id, what it derived
// from a tensor's contents: its matmul packs the right operand into an XNNPACK operator (it takes that operand for a
// constant weight) and reuses it in every later matmul with the same tensor. Left stale after an update in place,
// that cache would have a LoRA merge W + s B A (before each step's generation) multiply by A as it was when first
// packed, and a run resumed from a checkpoint (which packs A afresh) would sample differently from the run that went
// on. The kernel therefore tells tfjs-wasm that every tensor it wrote has new contents (contentsChanged).
import * as tf from '@tensorflow/tfjs';
import { wasmFmaFromEnv } from '../envSettings';
import { registerKernelTable, type AdamWAttrs, type HeadAttrs, type K } from './ops';
import { KERNELS_WASM_BASE64, KERNELS_WASM_RELAXED_BASE64 } from './wasm/module';

type Info = { dataId: object; shape: number[]; dtype: tf.DataType };
interface WasmBackend {
  wasm: {
    asm: { memory: WebAssembly.Memory };
    tfjs: { registerTensor(id: number, size: number, memoryOffset: number): void; disposeData(id: number): void };
  };
  dataIdMap: { get(id: object): { id: number; memoryOffset: number } };
  makeOutput(shape: number[], dtype: tf.DataType): Info;
  disposeData(id: object): void;
  incRef(id: object): void;
}
type Args = { inputs: Record<string, Info>; backend: WasmBackend; attrs: Record<string, unknown> };

/** The C kernels' exports (every pointer is a byte offset into tfjs's heap). */
interface Exports {
  rmsnorm_fwd(x: number, w: number, y: number, rows: number, H: number, eps: number): void;
  rmsnorm_bwd(dy: number, x: number, w: number, dx: number, dw: number, rows: number, H: number, eps: number): void;
  rope(
    x: number,
    pos: number,
    cos: number,
    sin: number,
    y: number,
    rows: number,
    W: number,
    nRot: number,
    hd: number,
    inverse: number,
  ): void;
  swiglu_fwd(gu: number, y: number, rows: number, I: number): void;
  swiglu_bwd(dy: number, gu: number, dgu: number, rows: number, I: number): void;
  logprob_fwd(z: number, target: number, lp: number, ent: number, rows: number, V: number, invT: number): void;
  logprob_bwd(
    dlp: number,
    dent: number,
    z: number,
    target: number,
    dz: number,
    rows: number,
    V: number,
    invT: number,
  ): void;
  attn_fwd(
    qkv: number,
    mask: number,
    out: number,
    lse: number,
    scratch: number,
    B: number,
    T: number,
    nH: number,
    nKV: number,
    hd: number,
    scale: number,
  ): void;
  attn_bwd(
    dout: number,
    qkv: number,
    mask: number,
    out: number,
    lse: number,
    dqkv: number,
    scratch: number,
    B: number,
    T: number,
    nH: number,
    nKV: number,
    hd: number,
    scale: number,
  ): void;
  /** Floats of scratch attn_fwd and attn_bwd need for T positions of head size hd. */
  attn_scratch_floats(T: number, hd: number): number;
  embed_fwd(table: number, ids: number, out: number, n: number, H: number): void;
  embed_bwd(dy: number, ids: number, dtable: number, n: number, V: number, H: number): void;
  sample_rows(z: number, u: number, out: number, rows: number, V: number, invT: number): void;
  sum_squares(ptrs: number, sizes: number, n: number, out: number): void;
  adamw_step(
    pptrs: number,
    gptrs: number,
    sizes: number,
    n: number,
    m: number,
    v: number,
    coef: number,
    decay: number,
    b1: number,
    omb1: number,
    b2: number,
    omb2: number,
    stepSize: number,
    bc2: number,
    eps: number,
  ): number;
  attn_cached(
    qkv: number,
    cacheK: number,
    cacheV: number,
    mask: number,
    out: number,
    scratch: number,
    B: number,
    T: number,
    C: number,
    slot: number,
    nH: number,
    nKV: number,
    hd: number,
    scale: number,
    shared: number,
  ): void;
  cache_shared_prefix(cacheK: number, cacheV: number, B: number, C: number, KW: number, upto: number): number;
  matmul(
    a: number,
    b: number,
    bias: number,
    hasBias: number,
    c: number,
    pack: number,
    M: number,
    N: number,
    K: number,
    transA: number,
    transB: number,
  ): void;
}

let compiled: WebAssembly.Module | null = null;
let instances = new WeakMap<WebAssembly.Memory, Exports>();

function base64Bytes(text: string): Uint8Array {
  const raw = atob(text);
  const bytes = new Uint8Array(raw.length);
  for (let i = 0; i < raw.length; i++) bytes[i] = raw.charCodeAt(i);
  return bytes;
}

/**
 * Which build of kernels.c runs: 'relaxed' (SIMD128 and relaxed SIMD: the matrix products' inner loops use a fused
 * multiply-add where the CPU has one) wherever the engine accepts relaxed SIMD, else 'simd' (SIMD128 only). The two
 * round differently, so a run's numbers depend on which one ran (and, with 'relaxed', on whether the CPU fuses);
 * RAGEN_WASM_FMA=0 (Node) forces 'simd'. null before compileWasmKernels().
 */
export let wasmKernelBuild: 'simd' | 'relaxed' | null = null;

/**
 * Whether this engine compiles `bytes` (a module using relaxed SIMD). Node 20's V8 has relaxed SIMD behind a flag
 * (on by default from Node 22 and Chrome 114): where the module is refused and V8's flags can be set, the flag is set
 * and the module tried again. Wasm features are read when a module is compiled, so setting the flag before the
 * compile is enough; a browser has no process and is never flagged.
 */
function acceptsRelaxedSimd(bytes: Uint8Array): boolean {
  if (WebAssembly.validate(bytes as BufferSource)) return true;
  const proc = (globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }).process;
  const v8 = proc?.getBuiltinModule?.('node:v8') as { setFlagsFromString(flags: string): void } | undefined;
  if (!v8) return false;
  v8.setFlagsFromString('--experimental-wasm-relaxed-simd');
  return WebAssembly.validate(bytes as BufferSource);
}

/**
 * Compiles the kernel module (asynchronously: browsers refuse synchronous compiles of large modules on the main
 * thread). `force` compiles that build, replacing the one compiled before (tests compare the two in one process).
 */
export async function compileWasmKernels(force?: 'simd' | 'relaxed'): Promise<void> {
  if (compiled && (!force || force === wasmKernelBuild)) return;
  if (force) {
    compiled = null;
    instances = new WeakMap();
  }
  const relaxed =
    force === 'relaxed' || (!force && wasmFmaFromEnv() !== '0') ? base64Bytes(KERNELS_WASM_RELAXED_BASE64) : null;
  const build = relaxed && acceptsRelaxedSimd(relaxed) ? 'relaxed' : 'simd';
  const bytes = build === 'relaxed' ? relaxed! : base64Bytes(KERNELS_WASM_BASE64);
  compiled = await WebAssembly.compile(bytes as BufferSource);
  wasmKernelBuild = build;
}

function kernels(backend: WasmBackend): Exports {
  const memory = backend.wasm.asm.memory;
  let k = instances.get(memory);
  if (!k) {
    if (!compiled) throw new Error('wasm kernels used before compileWasmKernels()');
    k = new WebAssembly.Instance(compiled, { env: { memory } }).exports as unknown as Exports;
    instances.set(memory, k);
  }
  return k;
}

const addr = (b: WasmBackend, t: Info) => b.dataIdMap.get(t.dataId).memoryOffset;

/** Runs `f` with a temporary float32 buffer of `n` floats on the heap. */
function withScratch(b: WasmBackend, n: number, f: (ptr: number) => void): void {
  const s = b.makeOutput([Math.max(1, n)], 'float32');
  try {
    f(addr(b, s));
  } finally {
    b.disposeData(s.dataId);
  }
}

/**
 * Tells tfjs-wasm that `t`'s contents were overwritten in place, so that it forgets what it cached about them (the
 * XNNPACK operators its matmul packed from them). Unregistering the tensor's id runs tfjs-wasm's disposal callbacks,
 * which delete those operators, and frees nothing (the JavaScript side owns the memory); the id is then registered
 * again at the same address, so the tensor stays what it is.
 */
function contentsChanged(b: WasmBackend, t: Info): void {
  const { id, memoryOffset } = b.dataIdMap.get(t.dataId);
  b.wasm.tfjs.disposeData(id);
  b.wasm.tfjs.registerTensor(
    id,
    t.shape.reduce((x, y) => x * y, 1),
    memoryOffset,
  );
}

const heads = (attrs: Record<string, unknown>) => attrs as unknown as HeadAttrs;

/** Runs `f` with int32 tables on the heap (addresses and sizes of many tensors), freed afterwards. */
function withTables(b: WasmBackend, tables: number[][], f: (ptrs: number[]) => number): number {
  const infos = tables.map((t) => b.makeOutput([Math.max(1, t.length)], 'int32'));
  try {
    const heap = new Int32Array(b.wasm.asm.memory.buffer);
    // >>> (unsigned): above 2 GiB of the 4 GiB heap, a signed shift would give a negative index.
    infos.forEach((info, k) => heap.set(tables[k], addr(b, info) >>> 2));
    return f(infos.map((info) => addr(b, info)));
  } finally {
    for (const info of infos) b.disposeData(info.dataId);
  }
}

const KERNELS: Partial<Record<keyof typeof K, (args: Args) => Info | Info[]>> = {
  sumSquares: ({ inputs, backend: b, attrs }) => {
    const ts = Array.from({ length: attrs.n as number }, (_, i) => inputs[`t${i}`]);
    const out = b.makeOutput([], 'float32');
    // Each segment is summed as a tensor of its own (a pointer into its tensor and a length: see sumOfSquares).
    const seg = attrs.segments as number[] | undefined;
    const ptrs = seg ? ([] as number[]) : ts.map((t) => addr(b, t));
    const sizes = seg ? ([] as number[]) : ts.map((t) => t.shape.reduce((x, y) => x * y, 1));
    for (let s = 0; seg && s < seg.length; s += 3) {
      ptrs.push(addr(b, ts[seg[s]]) + 4 * seg[s + 1]);
      sizes.push(seg[s + 2]);
    }
    withTables(b, [ptrs, sizes], ([p, n]) => {
      kernels(b).sum_squares(p, n, ptrs.length, addr(b, out));
      return 0;
    });
    return out;
  },
  adamW: ({ inputs, backend: b, attrs }) => {
    const a = attrs as unknown as AdamWAttrs & { n: number };
    const ps = Array.from({ length: a.n }, (_, i) => inputs[`p${i}`]),
      gs = Array.from({ length: a.n }, (_, i) => inputs[`g${i}`]);
    const sizes = ps.map((t) => t.shape.reduce((x, y) => x * y, 1));
    const applied = withTables(b, [ps.map((t) => addr(b, t)), gs.map((t) => addr(b, t)), sizes], ([pp, gp, sz]) =>
      kernels(b).adamw_step(
        pp,
        gp,
        sz,
        a.n,
        addr(b, inputs.m),
        addr(b, inputs.v),
        a.coef,
        a.decay,
        a.b1,
        a.omb1,
        a.b2,
        a.omb2,
        a.stepSize,
        a.bc2,
        a.eps,
      ),
    );
    if (applied) for (const t of [...ps, inputs.m, inputs.v]) contentsChanged(b, t);
    const flag = b.makeOutput([1], 'int32');
    new Int32Array(b.wasm.asm.memory.buffer, addr(b, flag), 1)[0] = applied;
    return flag;
  },
  embed: ({ inputs: { table, ids }, backend: b }) => {
    const out = b.makeOutput([ids.shape[0], table.shape[1]], 'float32');
    kernels(b).embed_fwd(addr(b, table), addr(b, ids), addr(b, out), ids.shape[0], table.shape[1]);
    return out;
  },
  embedGrad: ({ inputs: { dy, ids }, backend: b, attrs }) => {
    const V = attrs.vocabSize as number;
    const out = b.makeOutput([V, dy.shape[1]], 'float32');
    kernels(b).embed_bwd(addr(b, dy), addr(b, ids), addr(b, out), ids.shape[0], V, dy.shape[1]);
    return out;
  },
  sample: ({ inputs: { logits, uniforms }, backend: b, attrs }) => {
    const out = b.makeOutput([logits.shape[0]], 'int32');
    kernels(b).sample_rows(
      addr(b, logits),
      addr(b, uniforms),
      addr(b, out),
      logits.shape[0],
      logits.shape[1],
      1 / (attrs.temperature as number),
    );
    return out;
  },
  rmsNorm: ({ inputs: { x, weight }, backend: b, attrs }) => {
    const y = b.makeOutput(x.shape, 'float32');
    kernels(b).rmsnorm_fwd(addr(b, x), addr(b, weight), addr(b, y), x.shape[0], x.shape[1], attrs.eps as number);
    return y;
  },
  rmsNormGrad: ({ inputs: { dy, x, weight }, backend: b, attrs }) => {
    const dx = b.makeOutput(x.shape, 'float32'),
      dw = b.makeOutput(weight.shape, 'float32');
    kernels(b).rmsnorm_bwd(
      addr(b, dy),
      addr(b, x),
      addr(b, weight),
      addr(b, dx),
      addr(b, dw),
      x.shape[0],
      x.shape[1],
      attrs.eps as number,
    );
    return [dx, dw];
  },
  rope: ({ inputs: { x, positions, cos, sin }, backend: b, attrs }) => {
    const y = b.makeOutput(x.shape, 'float32');
    const { rotatedHeads, headDim, inverse } = attrs as { rotatedHeads: number; headDim: number; inverse: boolean };
    kernels(b).rope(
      addr(b, x),
      addr(b, positions),
      addr(b, cos),
      addr(b, sin),
      addr(b, y),
      x.shape[0],
      x.shape[1],
      rotatedHeads,
      headDim,
      inverse ? 1 : 0,
    );
    return y;
  },
  swiGlu: ({ inputs: { gu }, backend: b }) => {
    const y = b.makeOutput([gu.shape[0], gu.shape[1] / 2], 'float32');
    kernels(b).swiglu_fwd(addr(b, gu), addr(b, y), gu.shape[0], gu.shape[1] / 2);
    return y;
  },
  swiGluGrad: ({ inputs: { dy, gu }, backend: b }) => {
    const d = b.makeOutput(gu.shape, 'float32');
    kernels(b).swiglu_bwd(addr(b, dy), addr(b, gu), addr(b, d), gu.shape[0], gu.shape[1] / 2);
    return d;
  },
  logProbs: ({ inputs: { logits, targets }, backend: b, attrs }) => {
    const [rows, V] = logits.shape;
    const lp = b.makeOutput([rows], 'float32'),
      ent = b.makeOutput([rows], 'float32');
    kernels(b).logprob_fwd(
      addr(b, logits),
      addr(b, targets),
      addr(b, lp),
      addr(b, ent),
      rows,
      V,
      1 / (attrs.temperature as number),
    );
    return [lp, ent];
  },
  logProbsGrad: ({ inputs: { dLogProbs, dEntropy, logits, targets }, backend: b, attrs }) => {
    const [rows, V] = logits.shape;
    const dz = b.makeOutput(logits.shape, 'float32');
    kernels(b).logprob_bwd(
      addr(b, dLogProbs),
      addr(b, dEntropy),
      addr(b, logits),
      addr(b, targets),
      addr(b, dz),
      rows,
      V,
      1 / (attrs.temperature as number),
    );
    return dz;
  },
  attention: ({ inputs: { qkv, mask }, backend: b, attrs }) => {
    const { numHeads: nH, numKvHeads: nKV, headDim: hd } = heads(attrs);
    const [B, T] = mask.shape;
    const out = b.makeOutput([B * T, nH * hd], 'float32'),
      lse = b.makeOutput([B, nH, T], 'float32');
    withScratch(b, kernels(b).attn_scratch_floats(T, hd), (scratch) =>
      kernels(b).attn_fwd(
        addr(b, qkv),
        addr(b, mask),
        addr(b, out),
        addr(b, lse),
        scratch,
        B,
        T,
        nH,
        nKV,
        hd,
        1 / Math.sqrt(hd),
      ),
    );
    return [out, lse];
  },
  attentionGrad: ({ inputs: { dOut, qkv, mask, out, lse }, backend: b, attrs }) => {
    const { numHeads: nH, numKvHeads: nKV, headDim: hd } = heads(attrs);
    const [B, T] = mask.shape;
    const d = b.makeOutput(qkv.shape, 'float32');
    withScratch(b, kernels(b).attn_scratch_floats(T, hd), (scratch) =>
      kernels(b).attn_bwd(
        addr(b, dOut),
        addr(b, qkv),
        addr(b, mask),
        addr(b, out),
        addr(b, lse),
        addr(b, d),
        scratch,
        B,
        T,
        nH,
        nKV,
        hd,
        1 / Math.sqrt(hd),
      ),
    );
    return d;
  },
  // One decoder layer of generation in one kernel (the same steps as Qwen2Model.layer, with cachedAttention): tfjs
  // spends about 10 us on a kernel however small (tools/bench/wasm-kernels.ts), and a decode step's kernels are
  // small (a few rows), so nine of them a layer cost a large part of the step: tiny's generation ran 1.5x faster
  // this way (BENCHMARKS.md). The intermediates live in one scratch buffer; the o and down projections add into the
  // residual stream (matmul's accumulate mode). The cache is written in place, as cachedAttention's is.
  // A decode step (T = 1) computes only the rows whose new slot is visible: the others (a dialogue whose turn ended,
  // fed padding until the longest one ends: a quarter of frozenlake-tiny's rows; a free row of continuous batching)
  // have their output ignored, so their output is their input and their cache slot is left as it was. Every row is
  // computed on its own (matmul sums each element in k order, whatever the rows beside it), so the rows that are
  // computed get the same bits either way.
  decodeLayer: ({ inputs: i, backend: b, attrs }) => {
    const { numHeads: nH, numKvHeads: nKV, headDim: hd } = heads(attrs);
    const { slot, eps, shared } = attrs as { slot: number; eps: number; shared: number };
    const [R, H] = i.x.shape;
    const [B, C] = i.mask.shape;
    const T = R / B;
    const W = i.qkv.shape[1],
      I2 = i.gateUp.shape[1],
      A = nH * hd,
      KW = nKV * hd;
    const k = kernels(b);
    const y = b.makeOutput([R, H], 'float32');
    const heap = () => new Float32Array(b.wasm.asm.memory.buffer);
    heap().copyWithin(addr(b, y) >>> 2, addr(b, i.x) >>> 2, (addr(b, i.x) >>> 2) + R * H); // y = x, the residual stream
    const rows = T === 1 ? visibleRows(heap(), addr(b, i.mask) >>> 2, B, C, slot) : null; // null: all of them
    const n = rows ? rows.length : R; // rows computed
    if (n === 0) return decodeLayerOutputs(b, i, y);
    // Scratch: h [n, H], qkv and its rotation [n, W] each, attention's output [n, A], gate|up [n, I2], swiglu
    // [n, I2/2], matmul's packed block, attn_cached's scratch; for a subset of the rows, their x and y [n, H] and
    // positions [n] gathered.
    const pack = MM_KC * MM_NC;
    const sizes = [n * H, n * W, n * W, n * A, n * I2, (n * I2) / 2, pack, attnCachedScratch(C)];
    if (rows) sizes.push(n * H, n);
    withScratch(
      b,
      sizes.reduce((x, m) => x + m + 4, 0),
      (base) => {
        const at: number[] = [];
        sizes.reduce((p, m) => (at.push(p), p + 4 * (m + 4)), base);
        const [h, qkv, rot, att, gu, act, packed, scores, yRows, posRows] = at;
        let [x, out, positions] = [addr(b, i.x), addr(b, y), addr(b, i.positions)];
        if (rows) {
          const f32 = heap(),
            i32 = new Int32Array(f32.buffer);
          rows.forEach((r, j) => {
            f32.copyWithin((yRows >>> 2) + j * H, (out >>> 2) + r * H, (out >>> 2) + (r + 1) * H);
            i32[(posRows >>> 2) + j] = i32[(positions >>> 2) + r];
          });
          [x, out, positions] = [yRows, yRows, posRows];
        }
        const product = (a: number, w: Info, bias: number, mode: number, dst: number, cols: number, kk: number) =>
          k.matmul(a, addr(b, w), bias, mode, dst, packed, n, cols, kk, 0, 0);
        const attend = (q: number, o: number, b0: number, count: number) =>
          k.attn_cached(
            q,
            addr(b, i.cacheK) + 4 * b0 * C * KW,
            addr(b, i.cacheV) + 4 * b0 * C * KW,
            addr(b, i.mask) + 4 * b0 * C,
            o,
            scores,
            count,
            T,
            C,
            slot,
            nH,
            nKV,
            hd,
            1 / Math.sqrt(hd),
            shared,
          );
        k.rmsnorm_fwd(x, addr(b, i.inputNorm), h, n, H, eps);
        product(h, i.qkv, i.qkvBias ? addr(b, i.qkvBias) : 0, i.qkvBias ? 1 : 0, qkv, W, H);
        k.rope(qkv, positions, addr(b, i.cos), addr(b, i.sin), rot, n, W, nH + nKV, hd, 0);
        // One call per run of consecutive rows, at its first row's cache and mask. The slots below `shared` hold the
        // same bits in every cache row, so reading them from the run's first row instead of row 0 is alike.
        let done = 0;
        for (const [first, count] of rows ? consecutiveRuns(rows) : [[0, B]]) {
          attend(rot + 4 * done * W, att + 4 * done * A, first, count);
          done += count;
        }
        product(att, i.o, 0, 2, out, H, A);
        k.rmsnorm_fwd(out, addr(b, i.postNorm), h, n, H, eps);
        product(h, i.gateUp, 0, 0, gu, I2, H);
        k.swiglu_fwd(gu, act, n, I2 / 2);
        product(act, i.down, 0, 2, out, H, I2 / 2);
        if (rows) {
          const f32 = heap(),
            yAt = addr(b, y) >>> 2;
          rows.forEach((r, j) => f32.copyWithin(yAt + r * H, (yRows >>> 2) + j * H, (yRows >>> 2) + (j + 1) * H));
        }
      },
    );
    return decodeLayerOutputs(b, i, y);
  },
  cachedAttention: ({ inputs: { qkv, cacheK, cacheV, mask }, backend: b, attrs }) => {
    const { numHeads: nH, numKvHeads: nKV, headDim: hd } = heads(attrs);
    const [B, C] = mask.shape;
    const T = qkv.shape[0] / B;
    const out = b.makeOutput([B * T, nH * hd], 'float32');
    withScratch(b, attnCachedScratch(C), (scratch) =>
      kernels(b).attn_cached(
        addr(b, qkv),
        addr(b, cacheK),
        addr(b, cacheV),
        addr(b, mask),
        addr(b, out),
        scratch,
        B,
        T,
        C,
        attrs.slot as number,
        nH,
        nKV,
        hd,
        1 / Math.sqrt(hd),
        0,
      ),
    );
    b.incRef(cacheK.dataId);
    b.incRef(cacheV.dataId);
    return [out, { ...cacheK }, { ...cacheV }];
  },
};

/**
 * How many leading slots of a KV cache's keys k and values v [B, C, KW] (at most `upto`) hold the same bits in every
 * row: decodeLayer's `shared`, which then reads them from row 0 (kernels.c, attn_cached). wasm tensors only.
 */
export function wasmCacheSharedPrefix(k: tf.Tensor3D, v: tf.Tensor3D, upto: number): number {
  const b = tf.backend() as unknown as WasmBackend;
  const [B, C, KW] = k.shape;
  return kernels(b).cache_shared_prefix(addr(b, k), addr(b, v), B, C, KW, Math.min(upto, C));
}

/** attn_cached's scratch for a cache of C slots, in floats: two rows of scores, and the visible groups of four slots. */
const attnCachedScratch = (C: number) => 2 * (C + 4) + Math.ceil(C / 4) + 4;

/** The rows b of mask [B, C] (at float index `at` of the heap) whose slot `slot` is set, or null when all are. */
function visibleRows(f32: Float32Array, at: number, B: number, C: number, slot: number): number[] | null {
  const rows: number[] = [];
  for (let r = 0; r < B; r++) if (f32[at + r * C + slot] !== 0) rows.push(r);
  return rows.length === B ? null : rows;
}

/** Ascending `rows` as runs of consecutive rows: [first row, count] each. */
function consecutiveRuns(rows: readonly number[]): [number, number][] {
  const runs: [number, number][] = [];
  for (const r of rows) {
    const last = runs[runs.length - 1];
    if (last && last[0] + last[1] === r) last[1]++;
    else runs.push([r, 1]);
  }
  return runs;
}

/** decodeLayer's outputs: y, and the caches it wrote in place (one more reference each). */
function decodeLayerOutputs(b: WasmBackend, i: Record<string, Info>, y: Info): Info[] {
  b.incRef(i.cacheK.dataId);
  b.incRef(i.cacheV.dataId);
  return [y, { ...i.cacheK }, { ...i.cacheV }];
}

/** kernels.c's blocking of matmul: its packed block of op(B) is at most MM_KC x MM_NC floats. */
const MM_KC = 256,
  MM_NC = 256;

/** Whether compileWasmKernels() has finished, so that wasmOwnMatMul may run. */
export function wasmKernelsReady(): boolean {
  return compiled !== null;
}

/**
 * C [M, N] = op(a) op(b) (+ bias [N]) by kernels.c's matmul, for operands whose leading (batch) dimensions are all 1:
 * op(a) is a [M, K] or, transposed, a [K, M]; op(b) is b [K, N] or b [N, K]. `backend` is tfjs-wasm's backend object
 * (a kernel function's `backend` argument); the output has `outShape` (M x N elements).
 */
export function wasmOwnMatMul(
  backend: object,
  a: Info,
  b: Info,
  o: { transposeA: boolean; transposeB: boolean; bias?: Info; outShape: number[] },
): Info {
  const bk = backend as WasmBackend;
  const [ra, ca] = a.shape.slice(-2),
    [rb, cb] = b.shape.slice(-2);
  const [M, K] = o.transposeA ? [ca, ra] : [ra, ca];
  const N = o.transposeB ? rb : cb;
  const c = bk.makeOutput(o.outShape, 'float32');
  const packed = Math.min(K, MM_KC) * Math.min(Math.ceil(N / 8) * 8, MM_NC);
  withScratch(bk, packed, (pack) =>
    kernels(bk).matmul(
      addr(bk, a),
      addr(bk, b),
      o.bias ? addr(bk, o.bias) : 0,
      o.bias ? 1 : 0,
      addr(bk, c),
      pack,
      M,
      N,
      K,
      o.transposeA ? 1 : 0,
      o.transposeB ? 1 : 0,
    ),
  );
  return c;
}

/** Registers the fused kernels for the wasm backend (idempotent). Call compileWasmKernels() first. */
export function registerWasmKernels(): void {
  registerKernelTable('wasm', KERNELS);
}
