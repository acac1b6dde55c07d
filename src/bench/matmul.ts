// `ragen bench --only matmul`: the matmuls of one training update of a model shape, each timed alone, in tfjs on the
// chosen backend and in PyTorch on the same machine: it shows whether tfjs's generic f32 matmul is what keeps an
// update behind PyTorch on a GPU, and how the hand-written tiled WGSL kernel compares with it.
//
// The cases are the products the model really runs for B x T tokens (src/model/qwen2.ts, scoring.ts), each in the
// three forms of a linear layer y = x W^T (W as Hugging Face stores it, [out, in]):
//   forward      x W^T     [rows, in] x [out, in]^T       (A B^T)
//   grad-input   dY W      [rows, out] x [out, in]        (A B)
//   grad-weight  dY^T x    [rows, out]^T x [rows, in]     (A^T B)
// for the decoder layer's four linear layers (q, k and v stacked into one qkv product, gate and up into one gateUp,
// as the model runs them; o; down) with rows = B x T, and the LM head as scoring.ts runs it: above HEAD_CHUNK_ELEMENTS
// logits, chunks of C rows with the logits computed as W h^T ([V, H] x [C, H]^T, then transposed), d hidden =
// dLogits W, d W = dLogits^T h; below it, one plain x W^T over all B x (T - 1) scored rows (tfjs's matmul gradient).
// callsPerUpdate counts how often an update (no gradient checkpointing, no LoRA) runs each case: layers for the
// layer products; chunks for the head's, twice for its forward (recomputed in the backward).
//
// Implementations: 'tfjs' (tfjs's own matmul, every backend) and, on webgpu, the tiled kernel of
// src/model/kernels/webgpuMatmul.ts: 'tiled-wgsl-64x64', '-128x64' and '-128x128' (the output tile, f32) and
// 'tiled-wgsl-f16-128x64' (both operands stored as f16 packed two to a word by packHalf beforehand, f32
// accumulation; the packing is not timed: weights would be stored so), each with split-K where the output is
// too small to fill a GPU (autoSplitK). Each tiled row carries its largest difference from tf.matMul's result on
// the same inputs, relative to that result's largest magnitude, and its split-K.
// On webgpu also our own pipelines with f16 operands and f32 accumulation (src/model/kernels/webgpuHalfMatmul.ts):
// 'own-f16-storage', 'own-f16' and 'own-subgroup-matrix', the weight operand stored as f16 beforehand (packHalfFlat,
// not timed: the model keeps f16 copies of its weights) and the other read as float32, as the model's route runs
// them. Each runs only where the device has its features and it passed webgpuSelfCheck.ts's check against exact
// products (the checks are noted, and kept for the JSON report: matmulSelfChecks); GPU time is not measured for
// them (tfjs's timestamp queries cover its own programs only).
// On wasm the 'tfjs' rows are tfjs-wasm's own kernel (XNNPACK, an operand transposed first where the product asks) and
// 'wasm-own' is our kernels.c matmul (src/model/wasmMatMul.ts), whatever the size; the model's route takes whichever
// of the two measured faster.
// Timing: one untimed call (shader compilation), then samples of k back-to-back calls followed by one read of a
// single element of the last result (which waits for the queue on webgpu), k chosen so a sample lasts about
// SAMPLE_MS; samples until `seconds` have passed (at least MIN_SAMPLES); ms per call = the median sample / k.
// tools/bench/torch_matmul.py times the same cases the same way (torch.cuda.synchronize as the sync): f32 ('torch'
// rows) and, on CUDA, bf16 as RAGEN trains ('torch-bf16' rows).
import * as tf from '@tensorflow/tfjs';
import { initBackend, type BackendName } from '../model/backend';
import { headDim } from '../model/config';
import { hasTiledMatMul, packHalf, tiledMatMul } from '../model/kernels/index';
import { autoSplitK } from '../model/kernels/webgpuMatmul';
import { halfMatMul, packHalfFlat, type HalfFlavour, type HalfOperand } from '../model/kernels/webgpuHalfMatmul';
import { ownProgramBackend, tensorOf } from '../model/kernels/webgpuOwnProgram';
import { deviceSubgroupMatrixSettings, setWebGpuMatMul, webGpuMatMul } from '../model/webgpuMatMulRoute';
import { selfCheckWebGpuModes, type MatMulModeCheck } from '../model/webgpuSelfCheck';
import { setWasmMatMulRoute } from '../model/wasmMatMul';
import { HEAD_CHUNK_ELEMENTS } from '../model/scoring';
import type { BenchShape } from './model';

export const MATMUL_IMPLS = [
  'tfjs',
  'tiled-wgsl-64x64',
  'tiled-wgsl-128x64',
  'tiled-wgsl-128x128',
  'tiled-wgsl-f16-128x64',
  'own-f16-storage',
  'own-f16',
  'own-subgroup-matrix',
  'wasm-own',
] as const;
/** Each of our own f16 pipelines' rows and its mode. */
const OWN: Record<string, HalfFlavour> = {
  'own-f16-storage': 'f16-storage',
  'own-f16': 'f16',
  'own-subgroup-matrix': 'subgroup-matrix',
};
/** Each tiled implementation's output tile (rows x columns) and operand storage. */
const TILED: Record<string, { tileRows: 64 | 128; tileCols: 64 | 128; f16: boolean }> = {
  'tiled-wgsl-64x64': { tileRows: 64, tileCols: 64, f16: false },
  'tiled-wgsl-128x64': { tileRows: 128, tileCols: 64, f16: false },
  'tiled-wgsl-128x128': { tileRows: 128, tileCols: 128, f16: false },
  'tiled-wgsl-f16-128x64': { tileRows: 128, tileCols: 64, f16: true },
};
export type MatmulImpl = (typeof MATMUL_IMPLS)[number] | 'torch' | 'torch-bf16';
export type MatmulPass = 'forward' | 'grad-input' | 'grad-weight';

/** One product C [m, n] = op(A) op(B) with inner size k; A is stored [m, k] or (transposeA) [k, m], B [k, n] or [n, k]. */
export interface MatmulCase {
  /** "<shape> <op> <pass> <m>x<n>x<k>": the key of the case's rows in results.matmul and in the PyTorch spec. */
  key: string;
  op: string;
  pass: MatmulPass;
  m: number;
  n: number;
  k: number;
  transposeA: boolean;
  transposeB: boolean;
  callsPerUpdate: number;
}

/** One timed case and implementation (JSON `matmul` rows). */
export interface MatmulRow extends Omit<MatmulCase, 'key'> {
  shape: string;
  tokens: string;
  impl: MatmulImpl;
  /** tfjs backend, or the torch device. */
  device: string;
  msPerCall: number;
  gflops: number;
  /** webgpu with timestamp queries: the GPU's own time per call (tf.time's kernelMs over GPU_TIMED_CALLS calls),
   *  without the CPU's cost of issuing it; Dawn may round each timestamp (timestamp_quantization). */
  gpuMsPerCall?: number;
  /** Tiled rows: the K ranges the kernel summed (webgpuMatmul.ts: autoSplitK; 1 = no split). */
  splitK?: number;
  /** Tiled and own rows: max |C - tf.matMul's C| / max |tf.matMul's C|, same inputs. */
  maxRelErrorVsTfjs?: number;
  /** PyTorch's ms per call / this row's (above 1: this row is faster), where PyTorch ran the case. */
  vsTorch?: number;
}

const SAMPLE_MS = 20;
const MIN_SAMPLES = 3;
const MAX_SAMPLES = 200;
const MAX_CALLS_PER_SAMPLE = 256;
const GPU_TIMED_CALLS = 4;

/** The update's matmuls at a shape for `batch` sequences of `seqLen` tokens (see the top of this file). */
export function matmulCases(shape: BenchShape, batch: number, seqLen: number): MatmulCase[] {
  const c = shape.config;
  const H = c.hidden_size,
    hd = headDim(c),
    I = c.intermediate_size,
    V = c.vocab_size,
    L = c.num_hidden_layers;
  const rows = batch * seqLen;
  const cases: MatmulCase[] = [];
  const add = (
    op: string,
    pass: MatmulPass,
    m: number,
    n: number,
    k: number,
    transposeA: boolean,
    transposeB: boolean,
    calls: number,
  ) =>
    cases.push({
      key: `${shape.name} ${op} ${pass} ${m}x${n}x${k}`,
      op,
      pass,
      m,
      n,
      k,
      transposeA,
      transposeB,
      callsPerUpdate: calls,
    });
  const linear = (op: string, inW: number, outW: number, r = rows, calls = L) => {
    add(op, 'forward', r, outW, inW, false, true, calls);
    add(op, 'grad-input', r, inW, outW, false, false, calls);
    add(op, 'grad-weight', outW, inW, r, true, false, calls);
  };
  linear('qkv', H, (c.num_attention_heads + 2 * c.num_key_value_heads) * hd);
  linear('o', c.num_attention_heads * hd, H);
  linear('gateUp', H, 2 * I);
  linear('down', I, H);
  // The LM head over the B x (T - 1) positions that predict a token (scoring.ts's chunking rule).
  const scored = batch * (seqLen - 1);
  if (scored * V > HEAD_CHUNK_ELEMENTS) {
    const C = Math.max(1, Math.floor(HEAD_CHUNK_ELEMENTS / V));
    const chunks = Math.ceil(scored / C);
    add('head chunk', 'forward', V, C, H, false, true, 2 * chunks);
    add('head chunk', 'grad-input', C, H, V, false, false, chunks);
    add('head chunk', 'grad-weight', V, H, C, true, false, chunks);
  } else {
    linear('head', H, V, scored, 1);
  }
  return cases;
}

const gflops = (m: number, n: number, k: number, ms: number) => (2 * m * n * k) / (ms * 1e6);

/**
 * Median ms per call of `call` (whose result it disposes): see the top of this file. `seconds` is the least time
 * spent sampling after the warm-up and calibration calls.
 */
async function msPerCall(call: () => tf.Tensor, seconds: number): Promise<number> {
  const syncedCall = async (times: number) => {
    const start = performance.now();
    for (let i = 1; i < times; i++) call().dispose();
    const last = call();
    const probe = tf.tidy(() => last.reshape([-1]).slice(0, 1));
    await probe.data();
    tf.dispose([last, probe]);
    return performance.now() - start;
  };
  await syncedCall(1); // shader compilation, buffer pool
  const single = await syncedCall(1);
  const k = Math.max(1, Math.min(MAX_CALLS_PER_SAMPLE, Math.round(SAMPLE_MS / Math.max(single, 1e-3))));
  const samples: number[] = [];
  const start = performance.now();
  while (samples.length < MIN_SAMPLES || (performance.now() - start < seconds * 1000 && samples.length < MAX_SAMPLES)) {
    samples.push((await syncedCall(k)) / k);
  }
  samples.sort((a, b) => a - b);
  return samples[Math.floor(samples.length / 2)];
}

export interface BenchMatmulOptions {
  backend: BackendName;
  shape: BenchShape;
  batch: number;
  seqLen: number;
  seconds: number;
  seed?: number;
  note?: (line: string) => void;
  /** Only the cases of these ops (for example ['o', 'head']); every op of the shape by default. */
  ops?: readonly string[];
}

/** The tfjs rows (every implementation the backend has) of every case at one shape. */
export async function benchMatmul(o: BenchMatmulOptions): Promise<MatmulRow[]> {
  const note = o.note ?? (() => {});
  const backend = await initBackend(o.backend);
  const tiled = hasTiledMatMul();
  if (!tiled)
    note(
      `the tiled WGSL rows need the webgpu backend (this is ${backend.name}): ` +
        (backend.name === 'wasm' ? 'tfjs and wasm-own rows' : 'tfjs rows only'),
    );
  // The 'tfjs' rows are tfjs's own matmul, also where the model's matmuls are routed to the tiled kernel.
  // On wasm likewise tfjs-wasm's own kernel, and our kernels.c matmul in the 'wasm-own' rows.
  const routed = backend.name === 'webgpu' ? webGpuMatMul() : null;
  const own = backend.name === 'webgpu' ? await ownModesThatPass(note) : [];
  if (routed) setWebGpuMatMul('tfjs');
  if (backend.name === 'wasm') setWasmMatMulRoute('tfjs');
  try {
    return await matmulRows(o, tiled, own, note, backend.name);
  } finally {
    if (routed) setWebGpuMatMul(routed);
    if (backend.name === 'wasm') setWasmMatMulRoute('auto');
  }
}

/** A product through our own wasm kernel (kernels.c), whatever its size; tfjs-wasm's kernel again after it. */
function wasmOwnProduct(product: () => tf.Tensor): tf.Tensor {
  setWasmMatMulRoute('own');
  try {
    return product();
  } finally {
    setWasmMatMulRoute('tfjs');
  }
}

let selfChecks: MatMulModeCheck[] | null = null;

/** The self-checks of our own f16 modes this process ran (webgpu), for the JSON report; null before any. */
export function matmulSelfChecks(): MatMulModeCheck[] | null {
  return selfChecks;
}

/** Runs the self-checks once per process and returns the f16 modes that passed (the others are noted). */
async function ownModesThatPass(note: (line: string) => void): Promise<HalfFlavour[]> {
  if (!selfChecks) {
    selfChecks = await selfCheckWebGpuModes();
    for (const c of selfChecks) {
      note(
        `self-check ${c.mode}: ${c.ok ? 'ok' : 'not used'}` +
          (c.maxRelError !== null
            ? `, max |error| / sum of the terms' magnitudes ${c.maxRelError.toExponential(2)}`
            : '') +
          (c.reason ? ` (${c.reason})` : ''),
      );
    }
  }
  return selfChecks.filter((c) => c.ok && c.mode !== 'subgroup-reduce').map((c) => c.mode as HalfFlavour);
}

/** Which operand of a case is the weight, which the model keeps an f16 copy of: B of a linear layer's forward and
 *  grad-input (x W^T, dY W), A of the head chunk's forward (W h^T), none in grad-weight (dY^T x). */
function weightOperand(cs: MatmulCase): 'a' | 'b' | null {
  if (cs.pass === 'grad-weight') return null;
  return cs.op === 'head chunk' && cs.pass === 'forward' ? 'a' : 'b';
}

async function matmulRows(
  o: BenchMatmulOptions,
  tiled: boolean,
  own: readonly HalfFlavour[],
  note: (line: string) => void,
  backendName: string,
): Promise<MatmulRow[]> {
  const impls = MATMUL_IMPLS.filter((impl) =>
    impl === 'wasm-own' ? backendName === 'wasm' : impl === 'tfjs' || (OWN[impl] ? own.includes(OWN[impl]) : tiled),
  );
  const tokens = `${o.batch}x${o.seqLen}`;
  const rows: MatmulRow[] = [];
  let seed = o.seed ?? 0;
  const all = matmulCases(o.shape, o.batch, o.seqLen);
  const unknown = (o.ops ?? []).filter((op) => !all.some((c) => c.op === op));
  if (unknown.length)
    throw new Error(
      `benchMatmul: no matmul '${unknown.join("', '")}' at shape ${o.shape.name} (ops: ${[...new Set(all.map((c) => c.op))].join(', ')})`,
    );
  for (const cs of all.filter((c) => !o.ops || o.ops.includes(c.op))) {
    const { key, ...rest } = cs;
    const aShape: [number, number] = cs.transposeA ? [cs.k, cs.m] : [cs.m, cs.k];
    const bShape: [number, number] = cs.transposeB ? [cs.n, cs.k] : [cs.k, cs.n];
    const a = operand(aShape, ++seed),
      b = operand(bShape, ++seed);
    // packHalf needs stored rows that are whole vec2<i32> words of four f16 (true of every width of the Qwen shapes).
    const packable = aShape[1] % 4 === 0 && bShape[1] % 4 === 0;
    if (tiled && !packable) note(`${key} tiled-wgsl-f16-128x64: skipped (a stored row is not a multiple of 4 long)`);
    const packed = tiled && packable ? [packHalf(a), packHalf(b)] : [];
    // Our own f16 rows: the weight operand as f16 (made once, not timed), the other as float32.
    const weight = own.length ? weightOperand(cs) : null;
    const ownBackend = own.length ? ownProgramBackend() : null;
    const half = (x: tf.Tensor2D, isWeight: boolean): HalfOperand => ({
      info: isWeight ? packHalfFlat(ownBackend!, x) : x,
      shape: x.shape,
      storage: isWeight ? 'half' : 'f32',
    });
    const ownOperands = own.length ? [half(a, weight === 'a'), half(b, weight === 'b')] : [];
    const subgroupMatrix = deviceSubgroupMatrixSettings();
    // What the tiled rows are checked against (nothing to check, and no product to spend, without them).
    const reference = tiled || impls.includes('wasm-own') ? tf.matMul(a, b, cs.transposeA, cs.transposeB) : undefined;
    const forms = { transposeA: cs.transposeA, transposeB: cs.transposeB };
    try {
      for (const impl of impls.filter((i) => !TILED[i]?.f16 || packed.length)) {
        const t = TILED[impl];
        const flavour = OWN[impl];
        const call = (): tf.Tensor =>
          impl === 'wasm-own'
            ? wasmOwnProduct(() => tf.matMul(a, b, cs.transposeA, cs.transposeB))
            : flavour
              ? tensorOf(halfMatMul(ownBackend!, flavour, ownOperands[0], ownOperands[1], { ...forms, subgroupMatrix }))
              : !t
                ? tf.matMul(a, b, cs.transposeA, cs.transposeB)
                : t.f16
                  ? tiledMatMul(packed[0], packed[1], { ...forms, ...t })
                  : tiledMatMul(a, b, { ...forms, ...t });
        const ms = await msPerCall(call, o.seconds);
        const row: MatmulRow = {
          shape: o.shape.name,
          tokens,
          ...rest,
          impl,
          device: backendName,
          msPerCall: ms,
          gflops: gflops(cs.m, cs.n, cs.k, ms),
        };
        const gpuMs = flavour ? undefined : await gpuMsPerCall(call);
        if (gpuMs !== undefined) row.gpuMsPerCall = gpuMs;
        if (flavour || impl === 'wasm-own') row.maxRelErrorVsTfjs = await relativeDifference(call, reference!);
        if (t) {
          row.maxRelErrorVsTfjs = await relativeDifference(call, reference!);
          row.splitK = autoSplitK(cs.m, cs.n, cs.k, t.tileRows, t.tileCols);
        }
        rows.push(row);
        note(
          `${key} ${impl}: ${ms.toFixed(3)} ms, ${row.gflops.toFixed(1)} GFLOP/s` +
            (gpuMs !== undefined ? ` (GPU time ${gpuMs.toFixed(3)} ms)` : '') +
            (row.maxRelErrorVsTfjs !== undefined
              ? `, max rel. difference from tfjs ${row.maxRelErrorVsTfjs.toExponential(1)}`
              : '') +
            (row.splitK && row.splitK > 1 ? `, split-K ${row.splitK}` : ''),
        );
      }
    } finally {
      tf.dispose([a, b, ...(reference ? [reference] : []), ...packed]);
      for (const x of ownOperands) if (x.storage === 'half') tensorOf(x.info).dispose();
    }
  }
  return rows;
}

/** Rows of a seeded random block repeated down the operand: tfjs draws random numbers on the CPU, which for the LM
 *  head's 136 M-element weight would take seconds; tile runs on the backend. */
const OPERAND_BLOCK_ROWS = 257;
function operand([rows, cols]: [number, number], seed: number): tf.Tensor2D {
  return tf.tidy(() => {
    const block = tf.randomUniform([Math.min(rows, OPERAND_BLOCK_ROWS), cols], -1, 1, 'float32', seed);
    return rows <= OPERAND_BLOCK_ROWS
      ? block
      : tf.tile(block, [Math.ceil(rows / OPERAND_BLOCK_ROWS), 1]).slice(0, rows);
  }) as tf.Tensor2D;
}

/**
 * The GPU's time per call from timestamp queries (tfjs-webgpu times each program of tf.time's function in its own
 * compute pass), or undefined off webgpu or without the timestamp-query feature.
 */
async function gpuMsPerCall(call: () => tf.Tensor): Promise<number | undefined> {
  const backend = tf.backend() as unknown as { supportTimestampQuery?: boolean };
  if (tf.getBackend() !== 'webgpu' || !backend.supportTimestampQuery) return undefined;
  const info = await tf.time(() => {
    for (let i = 0; i < GPU_TIMED_CALLS; i++) call().dispose();
  });
  return typeof info.kernelMs === 'number' ? info.kernelMs / GPU_TIMED_CALLS : undefined;
}

/** max |call() - reference| / max |reference|. */
async function relativeDifference(call: () => tf.Tensor, reference: tf.Tensor): Promise<number> {
  const ratio = tf.tidy(() => tf.max(tf.abs(tf.sub(call(), reference))).div(tf.max(tf.abs(reference))));
  const [value] = await ratio.data();
  ratio.dispose();
  return value;
}

/** What tools/bench/torch_bench.py reads for the PyTorch side (torch_matmul.py). */
export function matmulTorchSpec(cases: readonly MatmulCase[], seconds: number) {
  return {
    seconds,
    matmuls: cases.map(({ key, m, n, k, transposeA, transposeB }) => ({ key, m, n, k, transposeA, transposeB })),
  };
}

/** The PyTorch rows from torch_matmul.py's results ("<key> ms"; on CUDA also "<key> bf16 ms": 'torch-bf16' rows),
 *  and vsTorch (against f32) filled in on the tfjs rows. */
export function addTorchRows(
  rows: MatmulRow[],
  cases: readonly MatmulCase[],
  shape: string,
  tokens: string,
  torch: Record<string, number>,
  device: string,
): MatmulRow[] {
  const torchRows: MatmulRow[] = [];
  for (const { key, ...rest } of cases) {
    const bf16 = torch[`${key} bf16 ms`];
    if (bf16 > 0) {
      torchRows.push({
        shape,
        tokens,
        ...rest,
        impl: 'torch-bf16',
        device,
        msPerCall: bf16,
        gflops: gflops(rest.m, rest.n, rest.k, bf16),
      });
    }
    const ms = torch[`${key} ms`];
    if (!(ms > 0)) continue;
    torchRows.push({
      shape,
      tokens,
      ...rest,
      impl: 'torch',
      device,
      msPerCall: ms,
      gflops: gflops(rest.m, rest.n, rest.k, ms),
    });
    for (const row of rows) {
      if (row.shape === shape && row.op === rest.op && row.pass === rest.pass && !row.impl.startsWith('torch'))
        row.vsTorch = ms / row.msPerCall;
    }
  }
  return [...rows, ...torchRows];
}

/**
 * results.matmul: "<shape> <op> <pass> <m>x<n>x<k> <impl> GFLOP/s", "... <impl>/torch" (speed ratio, above 1 = faster
 * than PyTorch) and, per implementation that ran every case, "<shape> <tokens> update matmuls <impl> ms" (the sum of
 * ms x callsPerUpdate: an update's matmul time, were each product as fast as alone).
 */
export function matmulTable(rows: readonly MatmulRow[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const r of rows) {
    const key = `${r.shape} ${r.op} ${r.pass} ${r.m}x${r.n}x${r.k}`;
    out[`${key} ${r.impl} GFLOP/s`] = r.gflops;
    if (r.gpuMsPerCall) out[`${key} ${r.impl} GPU-time GFLOP/s`] = gflops(r.m, r.n, r.k, r.gpuMsPerCall);
    if (r.vsTorch !== undefined) out[`${key} ${r.impl}/torch`] = r.vsTorch;
  }
  const groups = new Map<string, MatmulRow[]>();
  for (const r of rows) {
    const g = `${r.shape} ${r.tokens}`;
    groups.set(g, [...(groups.get(g) ?? []), r]);
  }
  for (const [g, mine] of groups) {
    const cases = new Set(mine.map((r) => `${r.op} ${r.pass}`)).size;
    for (const impl of new Set(mine.map((r) => r.impl))) {
      const of = mine.filter((r) => r.impl === impl);
      if (of.length === cases)
        out[`${g} update matmuls ${impl} ms`] = of.reduce((s, r) => s + r.msPerCall * r.callsPerUpdate, 0);
    }
  }
  return out;
}
