// Putting a kernel of our own in the place of one of tfjs's, with tfjs's own at hand for what ours does not take
// (wasm's BatchMatMul, Slice and SplitV; webgpu's matmuls).
import * as tf from '@tensorflow/tfjs';

/**
 * Registers `wrap(stock)` as `kernelName` on `backendName` instead of tfjs's kernel `stock`. Returns false, and
 * changes nothing, where the backend has no such kernel.
 */
export function replaceKernel<F>(kernelName: string, backendName: string, wrap: (stock: F) => F): boolean {
  const stock = tf.getKernel(kernelName, backendName);
  if (!stock) return false;
  tf.unregisterKernel(kernelName, backendName);
  tf.registerKernel({ ...stock, kernelFunc: wrap(stock.kernelFunc as unknown as F) as unknown as tf.KernelFunc });
  return true;
}
