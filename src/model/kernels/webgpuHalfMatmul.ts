// Matmuls with f16 operands and f32 accumulation, on pipelines of our own (webgpuOwnProgram.ts), in three flavours:
// - 'f16-storage': f16 values packed two to a 32-bit word and unpacked with unpack2x16float (core WGSL, every
//   adapter, SwiftShader included);
// - 'f16': the same buffers read as array<f16> with `enable f16;` (devices with shader-f16);
// - 'subgroup-matrix': `enable chromium_experimental_subgroup_matrix;`, the product of f16 tiles on the GPU's matrix
//   units (tensor cores on NVIDIA through Vulkan's cooperative matrices), in one of the shapes the adapter lists
//   (subgroupMatrixConfigs: an f16 x f16 -> f32 one).
// C [M, N] = op(A) op(B) (+ bias), op = identity or transpose, A and B each either float32 or half (f16 packed two to
// an int32 element: packHalfFlat, the whole tensor in row-major order, so any shape works). A float32 operand is
// rounded to f16 as it is read, so every flavour multiplies the same f16 operands and adds the products in f32: the
// results differ from f32's by the rounding of the operands (relative 2^-11 each), and from one another only by the
// order of the f32 additions.
//
// The model keeps an f16 copy of each weight (halfWeights.ts) and passes activations as float32: weights are read at
// half the bytes, activations are rounded in the tile load (no pass of their own).
import type { SubgroupMatrixConfig } from '../webgpuDevice';
import { runOwnProgram, uniformWords, type OwnProgramBackend } from './webgpuOwnProgram';
import type { Info } from './webgpuProgram';

export type HalfFlavour = 'f16-storage' | 'f16' | 'subgroup-matrix';

/** How an operand is stored: float32, or f16 (packed two to an int32 element). */
export type OperandStorage = 'f32' | 'half';

export interface HalfMatMulShape {
  M: number;
  N: number;
  K: number;
  transposeA: boolean;
  transposeB: boolean;
  aStorage: OperandStorage;
  bStorage: OperandStorage;
  bias: 'none' | 'row' | 'full';
}

/** The settings of the subgroup-matrix kernel: the matrix shape, the subgroups of a workgroup and their tiles. */
export interface SubgroupMatrixSettings {
  config: SubgroupMatrixConfig;
  /** The device's largest subgroup size: a workgroup is `subgroupsM x subgroupsN` of them (Dawn wants its size a
   *  multiple of it). */
  maxSubgroupSize: number;
  /** Subgroups of a workgroup down and across the output tile. */
  subgroupsM: number;
  subgroupsN: number;
  /** Result matrices per subgroup down and across. */
  tilesM: number;
  tilesN: number;
}

/** The subgroup-matrix shape the kernel uses among the adapter's: f16 operands, f32 results (null if none). */
export function pickSubgroupMatrixConfig(configs: SubgroupMatrixConfig[]): SubgroupMatrixConfig | null {
  return configs.find((c) => c.componentType === 'f16' && c.resultComponentType === 'f32') ?? null;
}

/**
 * The kernel's default tile for a config: 2 x 2 subgroups of 2 x 2 result matrices each (64 x 64 outputs for 16 x 16
 * matrices) where four subgroups fit a workgroup's `maxInvocations`, else one subgroup of 4 x 2.
 */
export function subgroupMatrixSettings(
  config: SubgroupMatrixConfig,
  maxSubgroupSize: number,
  maxInvocations = 256,
): SubgroupMatrixSettings {
  return 4 * maxSubgroupSize <= maxInvocations
    ? { config, maxSubgroupSize, subgroupsM: 2, subgroupsN: 2, tilesM: 2, tilesN: 2 }
    : { config, maxSubgroupSize, subgroupsM: 1, subgroupsN: 1, tilesM: 4, tilesN: 2 };
}

const TILE = 64,
  BK = 16,
  THREADS = 256;

/** WGSL reading element i of operand x (its binding name) as f32, rounded to f16 where it is stored as f32. */
function readElement(x: string, storage: OperandStorage, flavour: HalfFlavour): string {
  if (storage === 'half') {
    return flavour === 'f16-storage'
      ? `fn ld_${x}(i : u32) -> f32 { return unpack2x16float(${x}[i >> 1u])[i & 1u]; }`
      : `fn ld_${x}(i : u32) -> f32 { return f32(${x}[i]); }`;
  }
  return flavour === 'f16-storage'
    ? `fn ld_${x}(i : u32) -> f32 { return unpack2x16float(pack2x16float(vec2<f32>(${x}[i], 0.0))).x; }`
    : `fn ld_${x}(i : u32) -> f32 { return f32(f16(${x}[i])); }`;
}

/** The WGSL declaration of operand x at `binding`. */
function declareOperand(x: string, binding: number, storage: OperandStorage, flavour: HalfFlavour): string {
  const element = storage === 'f32' ? 'f32' : flavour === 'f16-storage' ? 'u32' : 'f16';
  return `@group(0) @binding(${binding}) var<storage, read> ${x} : array<${element}>;`;
}

/** Bindings, the uniforms, the operand readers op(A)(m, k) / op(B)(k, n) (0 outside) and the bias, shared by all. */
function common(s: HalfMatMulShape, flavour: HalfFlavour): string {
  const hasBias = s.bias !== 'none';
  return `
@group(0) @binding(0) var<storage, read_write> result : array<f32>;
${declareOperand('a', 1, s.aStorage, flavour)}
${declareOperand('b', 2, s.bStorage, flavour)}
${hasBias ? '@group(0) @binding(3) var<storage, read> bias : array<f32>;' : ''}
struct Uniforms { M : u32, N : u32, K : u32, pad : u32 }
@group(0) @binding(${hasBias ? 4 : 3}) var<uniform> uniforms : Uniforms;
${readElement('a', s.aStorage, flavour)}
${readElement('b', s.bStorage, flavour)}
fn opA(m : u32, k : u32) -> f32 {
  if (m >= uniforms.M || k >= uniforms.K) { return 0.0; }
  return ld_a(${s.transposeA ? 'k * uniforms.M + m' : 'm * uniforms.K + k'});
}
fn opB(k : u32, n : u32) -> f32 {
  if (k >= uniforms.K || n >= uniforms.N) { return 0.0; }
  return ld_b(${s.transposeB ? 'n * uniforms.K + k' : 'k * uniforms.N + n'});
}
fn store(m : u32, n : u32, v : f32) {
  if (m >= uniforms.M || n >= uniforms.N) { return; }
  result[m * uniforms.N + n] = v${s.bias === 'row' ? ' + bias[n]' : s.bias === 'full' ? ' + bias[m * uniforms.N + n]' : ''};
}`;
}

/** The key of a shape's program (the WGSL depends on nothing else than these and the flavour's settings). */
function shapeKey(s: HalfMatMulShape): string {
  return `${s.transposeA ? 't' : 'n'}${s.transposeB ? 't' : 'n'}_${s.aStorage}_${s.bStorage}_${s.bias}`;
}

/**
 * The 'f16-storage' / 'f16' program: 64 x 64 output tiles, 256 invocations each computing 4 x 4 outputs, K in steps
 * of 16 through workgroup tiles (f32 for f16-storage, f16 for f16) that hold op(A) and op(B) k-major in vec4s, so
 * that each step of the inner loop reads one vec4 of each.
 */
export function tiledHalfWgsl(s: HalfMatMulShape, flavour: 'f16-storage' | 'f16'): string {
  const T = flavour === 'f16' ? 'f16' : 'f32';
  // Each operand's tile is loaded so that neighbouring invocations read neighbouring stored elements.
  const aKContiguous = !s.transposeA,
    bKContiguous = s.transposeB;
  const load = (tile: string, op: string, kContiguous: boolean, first: string) => `
    for (var i = 0u; i < ${(TILE * BK) / THREADS}u; i = i + 1u) {
      let e = li + i * ${THREADS}u;
      let kk = ${kContiguous ? `e % ${BK}u` : `e / ${TILE}u`};
      let rc = ${kContiguous ? `e / ${BK}u` : `e % ${TILE}u`};
      ${tile}[kk * ${TILE / 4}u + rc / 4u][rc % 4u] = ${T}(${op === 'A' ? `opA(${first} + rc, k0 + kk)` : `opB(k0 + kk, ${first} + rc)`});
    }`;
  return `${flavour === 'f16' ? 'enable f16;' : ''}
${common(s, flavour)}
var<workgroup> tileA : array<vec4<${T}>, ${(TILE * BK) / 4}>;
var<workgroup> tileB : array<vec4<${T}>, ${(TILE * BK) / 4}>;

@compute @workgroup_size(${THREADS})
fn main(@builtin(workgroup_id) wg : vec3<u32>, @builtin(local_invocation_index) li : u32) {
  let m0 = wg.y * ${TILE}u;
  let n0 = wg.x * ${TILE}u;
  let tx = li % 16u;
  let ty = li / 16u;
  var acc : array<vec4<f32>, 4>;
  for (var k0 = 0u; k0 < uniforms.K; k0 = k0 + ${BK}u) {
    ${load('tileA', 'A', aKContiguous, 'm0')}
    ${load('tileB', 'B', bKContiguous, 'n0')}
    workgroupBarrier();
    for (var k = 0u; k < ${BK}u; k = k + 1u) {
      let av = vec4<f32>(tileA[k * ${TILE / 4}u + ty]);
      let bv = vec4<f32>(tileB[k * ${TILE / 4}u + tx]);
      for (var r = 0u; r < 4u; r = r + 1u) { acc[r] = fma(vec4<f32>(av[r]), bv, acc[r]); }
    }
    workgroupBarrier();
  }
  for (var r = 0u; r < 4u; r = r + 1u) {
    for (var c = 0u; c < 4u; c = c + 1u) { store(m0 + 4u * ty + r, n0 + 4u * tx + c, acc[r][c]); }
  }
}`;
}

/**
 * The 'subgroup-matrix' program. A workgroup is subgroupsM x subgroupsN subgroups of the device's largest size; each
 * subgroup owns tilesM x tilesN result matrices of the workgroup's output tile. K goes in steps of 2 config.K: the
 * workgroup rounds op(A) and op(B) to f16 into workgroup tiles (row-major, zero outside the matrices), then each
 * subgroup multiplies its rows of A's tile by its columns of B's with subgroupMatrixMultiplyAccumulate into f32
 * result matrices. At the end each result matrix goes through a small f32 scratch per subgroup to the output, with
 * bounds and the bias. A subgroup's offsets in the tiles come from its index (local index / subgroup size), which
 * WGSL's uniformity analysis cannot see is the same across the subgroup: `chromium.subgroup_matrix_uniformity` is
 * turned off for that. Where subgroups are smaller than the largest size, two of them share a part of the tile and
 * write the same values.
 */
export function subgroupMatrixWgsl(s: HalfMatMulShape, settings: SubgroupMatrixSettings): string {
  const { config, maxSubgroupSize, subgroupsM: SM, subgroupsN: SN, tilesM, tilesN } = settings;
  const { M: cm, N: cn, K: ck } = config;
  const S = SM * SN,
    W = S * maxSubgroupSize;
  const PM = tilesM * cm, // one subgroup's part of the tile
    PN = tilesN * cn;
  const BM = SM * PM,
    BN = SN * PN,
    K2 = 2 * ck,
    R = cm * cn; // elements of one result matrix
  const pairs: Array<[number, number]> = [];
  for (let i = 0; i < tilesM; i++) for (let j = 0; j < tilesN; j++) pairs.push([i, j]);
  const left = `subgroup_matrix_left<f16, ${ck}, ${cm}>`,
    right = `subgroup_matrix_right<f16, ${cn}, ${ck}>`,
    res = `subgroup_matrix_result<f32, ${cn}, ${cm}>`;
  const flush = ([i, j]: [number, number]) => `
  subgroupMatrixStore<row_major>(&scratch, sg * ${R}u, acc${i}_${j}, ${cn}u);
  workgroupBarrier();
  for (var e = li; e < ${S * R}u; e = e + ${W}u) {
    let part = e / ${R}u;
    let m = m0 + (part / ${SN}u) * ${PM}u + ${i * cm}u + (e % ${R}u) / ${cn}u;
    let n = n0 + (part % ${SN}u) * ${PN}u + ${j * cn}u + e % ${cn}u;
    store(m, n, scratch[e]);
  }
  workgroupBarrier();`;
  return `enable f16;
enable subgroups;
enable chromium_experimental_subgroup_matrix;
diagnostic(off, chromium.subgroup_matrix_uniformity);
${common(s, 'f16')}
var<workgroup> tileA : array<f16, ${BM * K2}>;
var<workgroup> tileB : array<f16, ${K2 * BN}>;
var<workgroup> scratch : array<f32, ${S * R}>;

@compute @workgroup_size(${W})
fn main(@builtin(workgroup_id) wg : vec3<u32>, @builtin(local_invocation_index) li : u32,
        @builtin(subgroup_size) width : u32) {
  let m0 = wg.y * ${BM}u;
  let n0 = wg.x * ${BN}u;
  let sg = (li / width) % ${S}u;
  let rowA = (sg / ${SN}u) * ${PM}u; // this subgroup's first row of the tile, and first column
  let colB = (sg % ${SN}u) * ${PN}u;
  ${pairs.map(([i, j]) => `var acc${i}_${j} = ${res}();`).join('\n  ')}
  for (var k0 = 0u; k0 < uniforms.K; k0 = k0 + ${K2}u) {
    for (var e = li; e < ${BM * K2}u; e = e + ${W}u) {
      tileA[e] = f16(opA(m0 + e / ${K2}u, k0 + e % ${K2}u));
    }
    for (var e = li; e < ${K2 * BN}u; e = e + ${W}u) {
      tileB[e] = f16(opB(k0 + e / ${BN}u, n0 + e % ${BN}u));
    }
    workgroupBarrier();
    for (var kk = 0u; kk < ${K2}u; kk = kk + ${ck}u) {
      ${Array.from({ length: tilesM }, (_, i) => `let l${i} = subgroupMatrixLoad<${left}, row_major>(&tileA, (rowA + ${i * cm}u) * ${K2}u + kk, ${K2}u);`).join('\n      ')}
      ${Array.from({ length: tilesN }, (_, j) => `let r${j} = subgroupMatrixLoad<${right}, row_major>(&tileB, kk * ${BN}u + colB + ${j * cn}u, ${BN}u);`).join('\n      ')}
      ${pairs.map(([i, j]) => `acc${i}_${j} = subgroupMatrixMultiplyAccumulate(l${i}, r${j}, acc${i}_${j});`).join('\n      ')}
    }
    workgroupBarrier();
  }
  ${pairs.map(flush).join('\n')}
}`;
}

/** The operands of halfMatMul: infos with the stored (logical) 2-D shapes; a half operand's info is packHalfFlat's. */
export interface HalfOperand {
  info: Info;
  /** The stored shape in elements ([M, K] for A, or [K, M] transposed); a half operand's info holds half as many. */
  shape: [number, number];
  storage: OperandStorage;
}

/** C = op(A) op(B) (+ bias) in `flavour` on our own pipeline; `subgroupMatrix` is required for that flavour. */
export function halfMatMul(
  backend: OwnProgramBackend,
  flavour: HalfFlavour,
  a: HalfOperand,
  b: HalfOperand,
  opts: { transposeA: boolean; transposeB: boolean; bias?: Info; subgroupMatrix?: SubgroupMatrixSettings },
): Info {
  const [M, K] = opts.transposeA ? [a.shape[1], a.shape[0]] : a.shape;
  const [Kb, N] = opts.transposeB ? [b.shape[1], b.shape[0]] : b.shape;
  if (K !== Kb) throw new Error(`halfMatMul: inner sizes differ (${K} and ${Kb})`);
  const biasSize = opts.bias ? opts.bias.shape.reduce((p, d) => p * d, 1) : 0;
  if (opts.bias && biasSize !== N && biasSize !== M * N) throw new Error(`halfMatMul: a bias of ${biasSize} values`);
  const s: HalfMatMulShape = {
    M,
    N,
    K,
    transposeA: opts.transposeA,
    transposeB: opts.transposeB,
    aStorage: a.storage,
    bStorage: b.storage,
    bias: !opts.bias ? 'none' : biasSize === N ? 'row' : 'full',
  };
  const uniforms = uniformWords([{ u32: M }, { u32: N }, { u32: K }, { u32: 0 }]);
  const inputs = [a.info, b.info, ...(opts.bias ? [opts.bias] : [])];
  if (flavour === 'subgroup-matrix') {
    const sm = opts.subgroupMatrix;
    if (!sm) throw new Error('halfMatMul: the subgroup-matrix flavour needs its settings (a config of the adapter)');
    const { M: cm, N: cn, K: ck } = sm.config;
    const [BM, BN] = [sm.subgroupsM * sm.tilesM * cm, sm.subgroupsN * sm.tilesN * cn];
    const program = {
      key: `sgmat_${cm}x${cn}x${ck}_s${sm.maxSubgroupSize}_${sm.subgroupsM}x${sm.subgroupsN}_${sm.tilesM}x${sm.tilesN}_${shapeKey(s)}`,
      code: () => subgroupMatrixWgsl(s, sm),
      dispatch: [Math.ceil(N / BN), Math.ceil(M / BM), 1] as [number, number, number],
      uniforms,
    };
    return runOwnProgram(backend, program, inputs, { shape: [M, N], dtype: 'float32' });
  }
  const program = {
    key: `half_${flavour}_${shapeKey(s)}`,
    code: () => tiledHalfWgsl(s, flavour),
    dispatch: [Math.ceil(N / TILE), Math.ceil(M / TILE), 1] as [number, number, number],
    uniforms,
  };
  return runOwnProgram(backend, program, inputs, { shape: [M, N], dtype: 'float32' });
}

/**
 * x (float32, any shape) rounded to f16 and packed two to an int32 element, in row-major order: int32 [ceil(n / 2)]
 * (the last word's upper half is 0 when n is odd). `into`: an existing tensor of that size, written in place.
 */
export function packHalfFlat(backend: OwnProgramBackend, x: Info, into?: Info): Info {
  const n = x.shape.reduce((p, d) => p * d, 1);
  const words = Math.ceil(n / 2);
  const code = `
@group(0) @binding(0) var<storage, read_write> result : array<u32>;
@group(0) @binding(1) var<storage, read> x : array<f32>;
struct Uniforms { n : u32, words : u32 }
@group(0) @binding(2) var<uniform> uniforms : Uniforms;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid : vec3<u32>, @builtin(num_workgroups) groups : vec3<u32>) {
  let w = gid.x + gid.y * groups.x * 64u;
  if (w >= uniforms.words) { return; }
  let hi = select(0.0, x[2u * w + 1u], 2u * w + 1u < uniforms.n);
  result[w] = pack2x16float(vec2<f32>(x[2u * w], hi));
}`;
  // Up to 65,535 workgroups across; more words go on further rows of workgroups.
  const groups = Math.max(1, Math.ceil(words / 64));
  const across = Math.min(groups, 65535);
  return runOwnProgram(
    backend,
    {
      key: 'pack_half_flat',
      code: () => code,
      dispatch: [across, Math.ceil(groups / across), 1],
      uniforms: uniformWords([{ u32: n }, { u32: words }]),
    },
    [x],
    into ?? { shape: [words], dtype: 'int32' },
  );
}
