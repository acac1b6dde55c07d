// A faster BatchMatMul for the wasm backend when an operand is transposed.
//
// Why: tfjs-backend-wasm 4.22's matmul is 5-25x slower with transposeA/transposeB than without (measured:
// [32,896] x [4864,896]^T took 122 ms vs 19 ms plain). Every linear layer hits it, because Hugging Face stores
// weights [out, in] (y = x W^T), and so does every weight gradient (x^T dy). Transposing the operand first with the
// wasm Transpose kernel and then running the plain kernel agrees to float rounding (relative ~1e-6; the parity tests
// against PyTorch still pass) at a fraction of the cost (122 -> ~30 ms on a quiet machine for the shape above). The op-level API, gradients and other backends are untouched.
import * as tf from '@tensorflow/tfjs';

type TensorInfo = { dataId: object; shape: number[]; dtype: string };
type KernelArgs = {
  inputs: Record<string, TensorInfo>;
  backend: { disposeData(id: object): void };
  attrs: Record<string, unknown>;
};
type KernelFn = (args: KernelArgs) => TensorInfo;

let installed = false;

/** Re-registers wasm's BatchMatMul with the transpose-first path. Idempotent; a no-op if wasm is not registered. */
export function installWasmTransposedMatMul(): void {
  if (installed) return;
  const matMul = tf.getKernel('BatchMatMul', 'wasm');
  const transpose = tf.getKernel('Transpose', 'wasm');
  if (!matMul || !transpose) return;
  const plain = matMul.kernelFunc as unknown as KernelFn;
  const transposeFn = transpose.kernelFunc as unknown as KernelFn;

  const swapLastTwo = (x: TensorInfo, args: KernelArgs): TensorInfo => {
    const perm = x.shape.map((_, i) => i);
    const r = perm.length;
    [perm[r - 2], perm[r - 1]] = [perm[r - 1], perm[r - 2]];
    return transposeFn({ inputs: { x }, backend: args.backend, attrs: { perm } });
  };

  tf.unregisterKernel('BatchMatMul', 'wasm');
  tf.registerKernel({
    ...matMul,
    kernelFunc: ((args: KernelArgs) => {
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
    }) as unknown as tf.KernelFunc,
  });
  installed = true;
}
