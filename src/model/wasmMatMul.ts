// wasm's BatchMatMul: our own kernel (kernels.c's matmul) where it is the faster, tfjs-wasm's otherwise.
//
// Our kernel folds the transposes of a linear layer's three products (y = x W^T, dx = dy W, dW = dy^T x) into its
// loads and is cache-blocked (kernels.c says how). Where it runs is what tools/bench/wasm-matmul.ts measured
// (BENCHMARKS.md, "Our own wasm matmul"): see ownRuns. Built for SIMD128 alone it adds in the same order as XNNPACK's
// kernel (each output is 0 + a0 b0 + a1 b1 + ..., in k order, one multiply and one add per term): both give the same
// bits at every size tested (tests/unit/model/wasm-own-matmul.test.ts), so a run's numbers do not depend on which of
// them took a product. Built with relaxed SIMD (kernels/wasm.ts, wasmKernelBuild) its terms are fused multiply-adds,
// which XNNPACK's are not: then ours takes every product it can, so that a row's bits never depend on how many rows
// were multiplied with it (two workers generate half a batch each and must sample what one worker samples).
//
// The fallback is tfjs-wasm's own kernel, with an operand transposed first where the product asks: tfjs-backend-wasm
// 4.22's matmul is 5-25x slower with transposeA/transposeB than without (measured: [32,896] x [4864,896]^T took
// 122 ms vs 19 ms plain), and transposing first with the wasm Transpose kernel gives the same products. It takes
// what our kernel does not: batched products (a leading dimension above 1) and, with the SIMD128 build, the plain
// products below ownIsFaster's bound. The op-level API, gradients and other backends are untouched.
import * as tf from '@tensorflow/tfjs';
import { wasmKernelBuild, wasmKernelsReady, wasmOwnMatMul } from './kernels/wasm';
import { replaceKernel } from './replaceKernel';

type TensorInfo = { dataId: object; shape: number[]; dtype: string };
type KernelArgs = {
  inputs: Record<string, TensorInfo>;
  backend: { disposeData(id: object): void };
  attrs: Record<string, unknown>;
};
type KernelFn = (args: KernelArgs) => TensorInfo;

let installed = false;

/** Which kernel runs wasm's BatchMatMul: 'tfjs' (tfjs-wasm's, transposing first), 'own' (kernels.c's, wherever it
 *  can) or 'auto' (ours where ownRuns). tools/bench/wasm-matmul.ts switches it to time both. */
export type WasmMatMulRoute = 'tfjs' | 'own' | 'auto';
let route: WasmMatMulRoute = 'auto';

export function setWasmMatMulRoute(r: WasmMatMulRoute): void {
  route = r;
}

/**
 * Whether our kernel is the faster for op(A) op(B) with m rows, as tools/bench/wasm-matmul.ts measured (BENCHMARKS.md):
 * with an operand transposed, always (1.3x at the tiny models' forward products, 1.25-3.6x at their weight gradients,
 * where tfjs's path transposes first and XNNPACK packs the fresh operand at every call); not transposed, from 32 rows
 * (1.06-1.08x at 32 rows, 1.2x at an update's 1,016-1,024). With 1-16 rows XNNPACK is the faster (3.3x at one row):
 * it keeps its packed copy of a right operand it has seen (generation's LM head, the same weight at every token),
 * where ours packs B at every call and computes four rows at a time.
 */
function ownIsFaster(m: number, transposeA: boolean, transposeB: boolean): boolean {
  return transposeA || transposeB || m >= 32;
}

/** Whether 'auto' takes our kernel: where it is the faster, and everywhere with the relaxed build (see the top). */
function ownRuns(m: number, transposeA: boolean, transposeB: boolean): boolean {
  return wasmKernelBuild === 'relaxed' || ownIsFaster(m, transposeA, transposeB);
}

/** The product by our kernel, or null where it does not run: it takes float32 operands whose leading (batch)
 *  dimensions are all 1. */
function ownProduct(args: KernelArgs): TensorInfo | null {
  const { a, b } = args.inputs;
  const { transposeA, transposeB } = args.attrs as { transposeA: boolean; transposeB: boolean };
  const single = (x: TensorInfo) => x.dtype === 'float32' && x.shape.slice(0, -2).every((d) => d === 1);
  if (route === 'tfjs' || !wasmKernelsReady() || !single(a) || !single(b)) return null;
  const m = a.shape[a.shape.length - (transposeA ? 1 : 2)];
  const n = b.shape[b.shape.length - (transposeB ? 2 : 1)];
  if (route === 'auto' && !ownRuns(m, transposeA, transposeB)) return null;
  const lead = new Array<number>(Math.max(a.shape.length, b.shape.length) - 2).fill(1);
  return wasmOwnMatMul(args.backend, a as never, b as never, { transposeA, transposeB, outShape: [...lead, m, n] });
}

/** Re-registers wasm's BatchMatMul as described above. Idempotent; a no-op if wasm is not registered. */
export function installWasmTransposedMatMul(): void {
  if (installed) return;
  const transpose = tf.getKernel('Transpose', 'wasm');
  if (!transpose) return;
  const transposeFn = transpose.kernelFunc as unknown as KernelFn;

  const swapLastTwo = (x: TensorInfo, args: KernelArgs): TensorInfo => {
    const perm = x.shape.map((_, i) => i);
    const r = perm.length;
    [perm[r - 2], perm[r - 1]] = [perm[r - 1], perm[r - 2]];
    return transposeFn({ inputs: { x }, backend: args.backend, attrs: { perm } });
  };

  installed = replaceKernel<KernelFn>('BatchMatMul', 'wasm', (plain) => (args) => {
    const own = ownProduct(args);
    if (own) return own;
    const { transposeA, transposeB } = args.attrs as { transposeA: boolean; transposeB: boolean };
    if (!transposeA && !transposeB) return plain(args);
    const a = transposeA ? swapLastTwo(args.inputs.a, args) : args.inputs.a;
    const b = transposeB ? swapLastTwo(args.inputs.b, args) : args.inputs.b;
    try {
      return plain({ ...args, inputs: { a, b }, attrs: { ...args.attrs, transposeA: false, transposeB: false } });
    } finally {
      if (a !== args.inputs.a) args.backend.disposeData(a.dataId);
      if (b !== args.inputs.b) args.backend.disposeData(b.dataId);
    }
  });
}
