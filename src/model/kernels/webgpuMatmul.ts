// A tiled matmul for tfjs's webgpu backend. The model's matmuls run in it on a GPU: src/model/webgpuMatMulRoute.ts
// routes tfjs's BatchMatMul and _FusedMatMul kernels here (on an H100 it beat tf.matMul on every product of a
// qwen0.5b update; BENCHMARKS.md). `ragen bench --only matmul` times its tile shapes next to tf.matMul
// (src/bench/matmul.ts), and tests/unit/model/webgpu-matmul.test.ts checks it against a float64 product on
// SwiftShader. Registered like the fused kernels (ops.ts: tiledMatMul, packHalf).
//
// C [M, N] = op(A) op(B), op = identity or transpose (the three forms of a linear layer's forward and backward:
// x W^T, dY W, dY^T x), 2-D, f32 accumulation. The shader:
// - one workgroup of 16 x 16 invocations per output tile of BM x BN (each 64 or 128), each invocation computing a
//   (BM / 16) x (BN / 16) block of C in registers (vec4 accumulators);
// - the K axis in steps of 16: each step, the workgroup copies a BM x 16 tile of op(A) and a 16 x BN tile of op(B)
//   into workgroup memory (k-major, so the inner loop reads vec4s of A rows and of B columns), one vec4 read of
//   global memory per invocation per 4 x 4 elements, whichever way the operand is stored;
// - vec4 reads of A and B (and vec4 writes of C) when the stored rows are a multiple of 4 floats long, scalar reads
//   with bounds checks otherwise; out-of-range elements read as 0, so any M, N, K works;
// - split-K where the output has too few tiles to fill a GPU and K is long (the LM head's d hidden: 220 x 896 from a
//   151,936-long K is 28 tiles): the K axis is cut into `splitK` ranges (multiples of the 16-deep step), one
//   workgroup layer each writing its partial product, and a second program sums the partial products in order
//   (deterministic, unlike atomics).
// Storage 'f16': A and B arrive packed by packHalf (two f16 in each 32-bit word, as an int32 tensor [R, C / 2]) and
// are unpacked with unpack2x16float, a core WGSL builtin. Why not `enable f16` with the shader-f16 feature (or
// `enable subgroups`): tfjs creates its GPUDevice itself and requests only timestamp-query (tfjs-backend-webgpu
// base.js), and its makeShader puts declarations before a program's code, where no `enable` directive may go; so no
// shader run through runWebGPUProgram can use either. Packed storage halves the bytes read all the same, and runs
// on every adapter.
import { perItem, type Args, type Info, type Program } from './webgpuProgram';

/** Attributes of RagenTiledMatMul. */
export interface TiledMatMulAttrs {
  transposeA: boolean;
  transposeB: boolean;
  /** Output rows per workgroup tile: 64 or 128 (4 or 8 rows per invocation). */
  tileRows: 64 | 128;
  /** Output columns per workgroup tile: 64 or 128 (4 or 8 columns per invocation). 128 x 128 fills the 16 KiB of
   *  workgroup memory WebGPU guarantees. */
  tileCols: 64 | 128;
  /** K ranges computed by separate workgroups and summed after (1: none; 0: autoSplitK's choice). */
  splitK: number;
}

/** Workgroups that keep a large GPU busy (an H100 has 132 streaming multiprocessors), and the least K per split. */
const BUSY_WORKGROUPS = 256,
  MIN_K_PER_SPLIT = 1024,
  MAX_SPLIT_K = 64;

/** The split-K the kernel uses by default: enough K ranges to reach BUSY_WORKGROUPS, each at least MIN_K_PER_SPLIT. */
export function autoSplitK(M: number, N: number, K: number, tileRows: number, tileCols: number): number {
  const tiles = Math.ceil(M / tileRows) * Math.ceil(N / tileCols);
  if (tiles >= BUSY_WORKGROUPS) return 1;
  return Math.max(1, Math.min(Math.ceil(BUSY_WORKGROUPS / tiles), Math.floor(K / MIN_K_PER_SPLIT), MAX_SPLIT_K));
}

const BK = 16,
  THREADS = 256;

/** The element type an operand is stored as: f32, or f16 packed two to an int32 word (packHalf). */
type Storage = 'f32' | 'f16';

/**
 * WGSL `fn read<X>4(r, c) -> vec4<f32>`: the 4 elements at row r, columns c..c+3 of operand X as stored ([R, C],
 * C = `cols`), 0 outside. `vec` (C a multiple of 4, c always a multiple of 4): one vector read.
 */
function readFour(x: string, rows: string, cols: string, storage: Storage, vec: boolean): string {
  const head = `fn read${x.toUpperCase()}4(r : i32, c : i32) -> vec4<f32> {
    if (r >= ${rows} || c >= ${cols}) { return vec4<f32>(0.0); }`;
  if (storage === 'f16') {
    // vec2<i32>: four f16
    return `${head}
    let p = ${x}[(r * ${cols} + c) / 4];
    return vec4<f32>(unpack2x16float(bitcast<u32>(p.x)), unpack2x16float(bitcast<u32>(p.y)));
  }`;
  }
  if (vec) return `${head}\n    return ${x}[(r * ${cols} + c) / 4];\n  }`;
  return `${head}
    var v = vec4<f32>(0.0);
    for (var i = 0; i < 4; i = i + 1) {
      if (c + i < ${cols}) { v[i] = ${x}[r * ${cols} + c + i]; }
    }
    return v;
  }`;
}

/**
 * WGSL that copies one k-step's tile of an operand into workgroup memory `tile` (k-major: tile[k * W4 + j] holds
 * op(X)[k][4j .. 4j+3] of the tile, W4 = width / 4), from global element (row0 of the tile, k0).
 * `kMajor`: X is stored with K as its rows (A transposed, or B as is), so a stored vec4 is a tile vec4.
 */
function loadTile(x: string, width: number, kMajor: boolean, row0: string): string {
  const w4 = width / 4;
  const passes = (width * BK) / 4 / THREADS;
  const lines: string[] = [];
  for (let p = 0; p < passes; p++) {
    const t = p === 0 ? 'tid' : `(tid + ${p * THREADS})`;
    if (kMajor) {
      // Stored [K, width]: invocation t reads row k0 + t / W4, columns row0 + 4 (t % W4).
      lines.push(
        `tile${x.toUpperCase()}[${t}] = read${x.toUpperCase()}4(k0 + ${t} / ${w4}, ${row0} + 4 * (${t} % ${w4}));`,
      );
    } else {
      // Stored [width, K]: invocation t reads row row0 + t / 4, columns k0 + 4 (t % 4), and scatters the 4 values
      // down the k axis of the tile.
      lines.push(`{
        let v = read${x.toUpperCase()}4(${row0} + ${t} / 4, k0 + 4 * (${t} % 4));
        let j = (${t} / 4);
        for (var i = 0; i < 4; i = i + 1) { tile${x.toUpperCase()}[(4 * (${t} % 4) + i) * ${w4} + j / 4][j % 4] = v[i]; }
      }`);
    }
  }
  return lines.join('\n      ');
}

/** What the output pass adds: nothing, a row of N added to every row, or a whole [M, N] tensor (a residual). */
type BiasKind = 'none' | 'row' | 'full';

/**
 * The program for C = op(A) op(B) (+ bias) with C [M, N]; with S K ranges (workgroup layer z sums k in
 * [z KS, (z + 1) KS)), the output is the S partial products, [S M, N], without the bias.
 */
function tiledProgram(
  M: number,
  N: number,
  S: number,
  attrs: TiledMatMulAttrs,
  storage: Storage,
  vecA: boolean,
  vecB: boolean,
  biasKind: BiasKind,
): Program {
  const hasBias = biasKind !== 'none';
  const { transposeA, transposeB, tileRows: BM, tileCols: BN } = attrs;
  const TM = BM / 16,
    TN4 = BN / 64; // per invocation: TM output rows, TN4 vec4s of columns
  const vecC = N % 4 === 0;
  const cols = Array.from({ length: TN4 }, (_, q) => q);
  // Stored shapes: A [M, K] or, transposed, [K, M]; B [K, N] or [N, K].
  const [aRows, aCols] = transposeA ? ['K', 'M'] : ['M', 'K'];
  const [bRows, bCols] = transposeB ? ['N', 'K'] : ['K', 'N'];
  const rows = Array.from({ length: TM }, (_, i) => i);
  const code = `
  var<workgroup> tileA : array<vec4<f32>, ${(BK * BM) / 4}>;
  var<workgroup> tileB : array<vec4<f32>, ${(BK * BN) / 4}>;
  ${readFour('a', `uniforms.${aRows}`, `uniforms.${aCols}`, storage, vecA)}
  ${readFour('b', `uniforms.${bRows}`, `uniforms.${bCols}`, storage, vecB)}

  fn main() {
    let M = uniforms.M;
    let N = uniforms.N;
    let K = uniforms.K;
    let tid = i32(localIndex);
    let tx = tid % 16;           // this invocation's ${4 * TN4} columns: n0 + ${4 * TN4} tx ..
    let ty = tid / 16;           // its ${TM} rows: m0 + ${TM} ty ..
    let m0 = i32(workgroupId.y) * ${BM};
    let n0 = i32(workgroupId.x) * ${BN};
    // This layer's K range: KS / ${BK} k-steps from z KS (KS is a multiple of ${BK}; reads past K give 0). The loop
    // holds barriers, so its bounds must be uniform: the step count comes from the uniforms, not from workgroupId
    // (which reaches main through a private variable, and WGSL's analysis cannot prove that uniform).
    let z = i32(workgroupId.z);
    let base = z * M * N;
    ${rows.flatMap((i) => cols.map((q) => `var acc${i}_${q} = vec4<f32>(0.0);`)).join('\n    ')}
    for (var step = 0; step < uniforms.KS / ${BK}; step = step + 1) {
      let k0 = z * uniforms.KS + step * ${BK};
      ${loadTile('a', BM, transposeA, 'm0')}
      ${loadTile('b', BN, !transposeB, 'n0')}
      workgroupBarrier();
      for (var k = 0; k < ${BK}; k = k + 1) {
        ${cols.map((q) => `let b${q} = tileB[k * ${BN / 4} + ${TN4} * tx + ${q}];`).join('\n        ')}
        ${Array.from({ length: TM / 4 }, (_, q) => `let a${q} = tileA[k * ${BM / 4} + ${TM / 4} * ty + ${q}];`).join('\n        ')}
        ${rows.flatMap((i) => cols.map((q) => `acc${i}_${q} = fma(vec4<f32>(a${Math.floor(i / 4)}[${i % 4}]), b${q}, acc${i}_${q});`)).join('\n        ')}
      }
      workgroupBarrier();
    }
    let n = n0 + ${4 * TN4} * tx;
    ${rows.flatMap((i) => cols.map((q) => `writeRow(base, m0 + ${TM} * ty + ${i}, n + ${4 * q}, acc${i}_${q});`)).join('\n    ')}
  }

  fn writeRow(base : i32, m : i32, n : i32, v : vec4<f32>) {
    let M = uniforms.M;
    let N = uniforms.N;
    if (m >= M || n >= N) { return; }
    var c = v;${
      hasBias
        ? `
    for (var j = 0; j < 4; j = j + 1) { if (n + j < N) { c[j] = c[j] + bias[${biasKind === 'full' ? 'm * N + ' : ''}n + j]; } }`
        : ''
    }
    ${
      vecC
        ? 'result[(base + m * N + n) / 4] = c;'
        : 'for (var j = 0; j < 4; j = j + 1) { if (n + j < N) { result[base + m * N + n + j] = c[j]; } }'
    }
  }`;
  const components = storage === 'f16' ? 2 : 4;
  return {
    variableNames: hasBias ? ['a', 'b', 'bias'] : ['a', 'b'],
    variableComponents: [vecA ? components : 1, vecB ? components : 1, ...(hasBias ? [1] : [])],
    outputComponent: vecC ? 4 : 1,
    outputShape: [S * M, N],
    shaderKey: `ragen_tiled_matmul_${storage}_${BM}x${BN}_${transposeA ? 't' : 'n'}${transposeB ? 't' : 'n'}_${+vecA}${+vecB}${+vecC}${hasBias ? `_${biasKind}_bias` : ''}`,
    dispatchLayout: { x: [1], y: [0] },
    dispatch: [Math.ceil(N / BN), Math.ceil(M / BM), S],
    workgroupSize: [THREADS, 1, 1],
    uniforms: 'M : i32, N : i32, K : i32, KS : i32,',
    getUserCode: () => code,
  };
}

/** RagenTiledMatMul: inputs a, b both float32 (f32 storage) or both packed by packHalf (int32, f16 storage), and an
 *  optional float32 `bias` added in the same program: N values added to every row of the product, or M x N values
 *  added element by element (the residual stream, which a layer's o and down projections end by adding). */
function tiledMatMul({ inputs: { a, b, bias }, backend, attrs }: Args): Info {
  const { transposeA, transposeB, tileRows, tileCols, splitK } = attrs as unknown as TiledMatMulAttrs;
  if (a.shape.length !== 2 || b.shape.length !== 2)
    throw new Error(`tiledMatMul: 2-D operands only, got [${a.shape}] and [${b.shape}]`);
  for (const [name, v] of [
    ['tileRows', tileRows],
    ['tileCols', tileCols],
  ] as const) {
    if (v !== 64 && v !== 128) throw new Error(`tiledMatMul: ${name} must be 64 or 128, got ${v}`);
  }
  if (a.dtype !== b.dtype)
    throw new Error(`tiledMatMul: both operands f32 or both packed f16, got ${a.dtype} and ${b.dtype}`);
  const storage: Storage = a.dtype === 'int32' ? 'f16' : 'f32';
  // Logical (unpacked) stored shapes: a packed operand holds two values per element of its last axis.
  const widen = (s: number[]) => (storage === 'f16' ? [s[0], 2 * s[1]] : s);
  const [aR, aC] = widen(a.shape),
    [bR, bC] = widen(b.shape);
  const [M, K] = transposeA ? [aC, aR] : [aR, aC];
  const [Kb, N] = transposeB ? [bC, bR] : [bR, bC];
  if (K !== Kb) throw new Error(`tiledMatMul: inner sizes differ (${K} and ${Kb}) for [${a.shape}] x [${b.shape}]`);
  if (!Number.isInteger(splitK) || splitK < 0)
    throw new Error(`tiledMatMul: splitK must be an integer >= 0, got ${splitK}`);
  const S = Math.min(splitK || autoSplitK(M, N, K, tileRows, tileCols), Math.max(1, Math.ceil(K / BK)));
  const KS = Math.ceil(K / S / BK) * BK;
  const biasSize = bias ? bias.shape.reduce((p, d) => p * d, 1) : 0;
  if (bias && (bias.dtype !== 'float32' || (biasSize !== N && biasSize !== M * N))) {
    throw new Error(
      `tiledMatMul: the bias must be float32 with N = ${N} or M x N = ${M * N} values, got ${bias.dtype} [${bias.shape}]`,
    );
  }
  const biasKind: BiasKind = !bias ? 'none' : biasSize === N ? 'row' : 'full';
  const flatBias = bias ? [{ ...bias, shape: [biasSize] }] : [];
  const program = tiledProgram(
    M,
    N,
    S,
    { transposeA, transposeB, tileRows, tileCols, splitK: S },
    storage,
    aC % 4 === 0,
    bC % 4 === 0,
    S === 1 ? biasKind : 'none',
  );
  const out = backend.runWebGPUProgram(program, [a, b, ...(S === 1 ? flatBias : [])], 'float32', [
    { type: 'int32', data: [M] },
    { type: 'int32', data: [N] },
    { type: 'int32', data: [K] },
    { type: 'int32', data: [KS] },
  ]);
  if (S === 1) return out;
  // The S partial products [S M, N], summed in order of s (then the bias): one invocation per element of C.
  const code = `
  fn main(index : i32) {
    let MN = uniforms.outShape[0] * uniforms.outShape[1];
    if (index >= MN) { return; }
    var sum = 0.0;
    for (var s = 0; s < ${S}; s = s + 1) { sum = sum + partial[s * MN + index]; }
    result[index] = sum${biasKind === 'row' ? ' + bias[index % uniforms.outShape[1]]' : biasKind === 'full' ? ' + bias[index]' : ''};
  }`;
  const sum = backend.runWebGPUProgram(
    perItem(
      `split_k_sum_${S}${bias ? `_${biasKind}_bias` : ''}`,
      bias ? ['partial', 'bias'] : ['partial'],
      [M, N],
      M * N,
      code,
    ),
    [out, ...flatBias],
    'float32',
  );
  backend.disposeData(out.dataId);
  return sum;
}

/**
 * RagenPackHalf: x float32 [R, C] (C a multiple of 4, so that every row is whole vec2<i32> words for the tiled
 * kernel's vector reads) -> int32 [R, C / 2], word j = pack2x16float(x[2j], x[2j + 1]) (round to nearest f16).
 */
function packHalf({ inputs: { x }, backend }: Args): Info {
  const [R, C] = x.shape;
  if (x.shape.length !== 2 || C % 4 !== 0)
    throw new Error(`packHalf: a 2-D tensor whose rows are a multiple of 4 long, got [${x.shape}]`);
  const words = (R * C) / 2;
  const code = `
  fn main(index : i32) {
    if (index >= uniforms.outShape[0] * uniforms.outShape[1]) { return; }
    result[index] = bitcast<i32>(pack2x16float(vec2<f32>(x[2 * index], x[2 * index + 1])));
  }`;
  return backend.runWebGPUProgram(perItem('pack_half', ['x'], [R, C / 2], words, code), [x], 'int32');
}

/** The tiled matmul kernels, keyed as ops.ts's K (registered by registerWebGpuKernels). */
export const webGpuMatmulKernels = { tiledMatMul, packHalf };
