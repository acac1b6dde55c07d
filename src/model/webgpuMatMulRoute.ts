// The model's matmuls on webgpu through our tiled WGSL kernel (kernels/webgpuMatmul.ts) instead of tfjs's own.
//
// Why: on an H100 every matmul of a qwen0.5b update ran faster in the tiled kernel (64 x 64 tiles) than in
// tf.matMul, 1.1-17x per product, and the update's matmuls took 237 ms instead of 720 (BENCHMARKS.md, "Matmuls
// alone"; PyTorch: 114). Its results differ from tf.matMul's by float rounding (relative ~1e-6) and are the same on
// every run. The op-level API and gradients are untouched: tfjs's BatchMatMul and _FusedMatMul kernels on webgpu
// are re-registered to send what the tiled kernel does (float32, batch dimensions of 1, no activation, a bias that is
// a row or the whole product's shape, at least MIN_TILED_ROWS rows: training and prefill, not decode steps) there,
// and the rest to tfjs's kernel, as wasmMatMul.ts does for wasm.
//
// Which matmul runs: `RAGEN_WEBGPU_MATMUL` (Node's environment) = `tiled` or `tfjs`; by default tiled on a GPU and
// tfjs's on a software adapter (SwiftShader, where the tests choose explicitly: setWebGpuMatMul).
//
// The f16 modes send the same products to our own pipelines (kernels/webgpuHalfMatmul.ts) with f16 operands and f32
// accumulation: `f16-storage` (any adapter), `f16` (the device has shader-f16), `subgroup-matrix` (the device has
// chromium-experimental-subgroup-matrix with an f16 x f16 -> f32 shape). A weight (a variable's data) is read from
// its f16 copy (halfWeights.ts), an activation as float32 rounded to f16 in the kernel. Results differ from f32 by
// the operands' rounding (relative 2^-11 each); webgpuSelfCheck.ts checks a mode against f32 before it is used.
import * as tf from '@tensorflow/tfjs';
import { webGpuMatmulKernels } from './kernels/webgpuMatmul';
import {
  halfMatMul,
  pickSubgroupMatrixConfig,
  subgroupMatrixSettings,
  type HalfFlavour,
  type HalfOperand,
  type SubgroupMatrixSettings,
} from './kernels/webgpuHalfMatmul';
import { watchInPlaceWrites } from './kernels/inPlaceWrites';
import type { OwnProgramBackend } from './kernels/webgpuOwnProgram';
import type { Args, Info } from './kernels/webgpuProgram';
import { halfWeightFor } from './halfWeights';
import { webgpuDeviceFacts, webgpuDeviceHas } from './webgpuDevice';
import { webGpuMatMulFromEnv, WEBGPU_MATMULS, type WebGpuMatMul } from './envSettings';
import { replaceKernel } from './replaceKernel';

export type { WebGpuMatMul };

let mode: WebGpuMatMul = 'tfjs';
let installed = false;

/** Which matmul the model's webgpu matmuls run now. */
export function webGpuMatMul(): WebGpuMatMul {
  return mode;
}

/** Chooses the matmul of webgpu's BatchMatMul and _FusedMatMul kernels (installing the router on first use). */
export function setWebGpuMatMul(next: WebGpuMatMul): void {
  if (!WEBGPU_MATMULS.includes(next))
    throw new Error(`webgpu matmul must be one of ${WEBGPU_MATMULS.join(', ')}, got '${String(next)}'`);
  const missing = missingFeature(next);
  if (missing) throw new Error(`webgpu matmul '${next}' needs ${missing}`);
  install();
  mode = next;
}

/** The f16 modes: f16 operands, f32 accumulation, on our own pipelines. */
export const HALF_MATMULS: readonly HalfFlavour[] = ['f16-storage', 'f16', 'subgroup-matrix'];
const isHalf = (m: WebGpuMatMul): m is HalfFlavour => (HALF_MATMULS as readonly string[]).includes(m);

/** What the webgpu backend's device lacks for `m`, in words, or null when it can run it. */
export function missingFeature(m: WebGpuMatMul): string | null {
  if (m === 'f16' && !webgpuDeviceHas('shader-f16')) return "the device feature 'shader-f16', which this device lacks";
  if (m === 'subgroup-matrix') {
    if (!webgpuDeviceHas('chromium-experimental-subgroup-matrix'))
      return "the device feature 'chromium-experimental-subgroup-matrix', which this device lacks";
    for (const f of ['shader-f16', 'subgroups'])
      if (!webgpuDeviceHas(f)) return `the device feature '${f}', which this device lacks`;
    if (!pickSubgroupMatrixConfig(webgpuDeviceFacts()?.subgroupMatrixConfigs ?? []))
      return 'a subgroup matrix shape with f16 operands and f32 results, which this adapter does not list';
  }
  return null;
}

/** The subgroup-matrix kernel's default settings for the backend's device, or undefined without a usable shape. */
export function deviceSubgroupMatrixSettings(): SubgroupMatrixSettings | undefined {
  const facts = webgpuDeviceFacts();
  const config = pickSubgroupMatrixConfig(facts?.subgroupMatrixConfigs ?? []);
  return config
    ? subgroupMatrixSettings(config, facts?.subgroupMaxSize ?? 32, facts?.maxInvocationsPerWorkgroup)
    : undefined;
}

/** The webgpu matmul modes this device can run (tfjs and tiled always). */
export function supportedWebGpuMatMuls(): WebGpuMatMul[] {
  return WEBGPU_MATMULS.filter((m) => missingFeature(m) === null);
}

/** The choice for a fresh webgpu backend: RAGEN_WEBGPU_MATMUL where set, else tiled on a GPU, tfjs's on software. */
export function defaultWebGpuMatMul(softwareAdapter: boolean): WebGpuMatMul {
  return webGpuMatMulFromEnv() ?? (softwareAdapter ? 'tfjs' : 'tiled');
}

const TILED = { tileRows: 64, tileCols: 64, splitK: 0 } as const;

/** Products with fewer rows stay on tfjs's kernel: decode steps (one row per sequence) were not measured against it,
 *  tfjs has a small-output path for them, and a 64 x 64 tile would compute mostly padding (split-K, which a long K
 *  with few tiles gets, would add a dispatch to a launch-bound step). */
export const MIN_TILED_ROWS = 64;

/** The last two dimensions, when every dimension before them is 1 (one matrix), else null. */
function matrixOf(shape: number[]): [number, number] | null {
  const r = shape.length;
  if (r < 2 || shape.slice(0, r - 2).some((d) => d !== 1)) return null;
  return [shape[r - 2], shape[r - 1]];
}

/** [..., N] with every dimension before N 1: a bias row. */
const isRow = (shape: number[], N: number) =>
  shape.length >= 1 && shape[shape.length - 1] === N && shape.slice(0, -1).every((d) => d === 1);
/** [..., M, N] with every dimension before them 1: a whole matrix added to the product (the model's residual). */
const isMatrix = (shape: number[], M: number, N: number) => matrixOf(shape)?.join() === `${M},${N}`;

/** Runs op(a) op(b) (+ bias) in the tiled kernel, or returns null when it does not apply to these inputs. */
function tiled(args: Args): Info | null {
  const { a, b, bias, preluActivationWeights } = args.inputs;
  const { transposeA, transposeB, activation } = args.attrs as {
    transposeA: boolean;
    transposeB: boolean;
    activation?: string;
  };
  if (mode === 'tfjs' || preluActivationWeights || (activation !== undefined && activation !== 'linear')) return null;
  if (a.dtype !== 'float32' || b.dtype !== 'float32') return null;
  const ma = matrixOf(a.shape),
    mb = matrixOf(b.shape);
  if (!ma || !mb) return null;
  const [M, K] = transposeA ? [ma[1], ma[0]] : ma;
  const N = transposeB ? mb[0] : mb[1];
  if (M < MIN_TILED_ROWS || N === 0 || K === 0) return null;
  if (bias && (bias.dtype !== 'float32' || !(isRow(bias.shape, N) || isMatrix(bias.shape, M, N)))) return null;
  const rank = Math.max(a.shape.length, b.shape.length);
  if (isHalf(mode)) {
    const out = half(mode, args.backend as unknown as HalfBackend, a, ma, b, mb, transposeA, transposeB, bias);
    return { ...out, shape: [...new Array(rank - 2).fill(1), M, N] };
  }
  const inputs: Args['inputs'] = { a: { ...a, shape: ma }, b: { ...b, shape: mb } };
  if (bias) inputs.bias = bias; // added in the kernel's own output pass
  const out = webGpuMatmulKernels.tiledMatMul({
    inputs,
    backend: args.backend,
    attrs: { transposeA, transposeB, ...TILED },
  });
  return { ...out, shape: [...new Array(rank - 2).fill(1), M, N] };
}

type HalfBackend = OwnProgramBackend & { disposeData(dataId: object): void };

/** op(a) op(b) (+ bias) in f16 mode `flavour`: weights from their f16 copies, the rest as float32. */
function half(
  flavour: HalfFlavour,
  backend: HalfBackend,
  a: Info,
  ma: [number, number],
  b: Info,
  mb: [number, number],
  transposeA: boolean,
  transposeB: boolean,
  bias: Info | undefined,
): Info {
  const operand = (x: Info, shape: [number, number]): HalfOperand => {
    const copy = halfWeightFor(backend, x);
    return copy ? { info: copy, shape, storage: 'half' } : { info: x, shape, storage: 'f32' };
  };
  const subgroupMatrix = flavour === 'subgroup-matrix' ? deviceSubgroupMatrixSettings() : undefined;
  return halfMatMul(backend, flavour, operand(a, ma), operand(b, mb), { transposeA, transposeB, bias, subgroupMatrix });
}

function install(): void {
  // Every in-place write counted, so that the f16 weight copies notice AdamW's updates (halfWeights.ts).
  const backend = tf.backend() as unknown as { runWebGPUProgram?: unknown };
  if (typeof backend.runWebGPUProgram === 'function') watchInPlaceWrites(backend as { runWebGPUProgram: unknown });
  if (installed) return;
  for (const name of ['BatchMatMul', '_FusedMatMul']) {
    const routed = replaceKernel<(args: Args) => Info>(
      name,
      'webgpu',
      (tfjsKernel) => (args) => tiled(args) ?? tfjsKernel(args),
    );
    if (!routed) throw new Error(`webgpu matmul: tfjs's webgpu backend has no ${name} kernel to route`);
  }
  installed = true;
}
