// Registers the fused kernels (ops.ts) for the backends that have them. initBackend() calls this once the backend
// is up; ops fall back to stock tfjs compositions wherever a kernel is missing, so calling it is an optimisation, not
// a requirement for correctness.
import * as tf from '@tensorflow/tfjs';
import { registerCpuKernels } from './cpu';
import { registerFusedGradients } from './ops';
import { compileWasmKernels, registerWasmKernels } from './wasm';
import { registerWebGpuKernels } from './webgpu';

export * from './ops';
export { wasmCacheSharedPrefix } from './wasm';

/**
 * Registers gradients and the cpu and wasm kernels (the wasm module is compiled here, asynchronously), and the
 * webgpu kernels once the webgpu backend is registered with tfjs (webgpu.ts itself needs no WebGPU to load).
 * Idempotent.
 */
export async function registerFusedKernels(): Promise<void> {
  registerFusedGradients();
  registerCpuKernels();
  await compileWasmKernels();
  registerWasmKernels();
  if (tf.findBackendFactory('webgpu')) registerWebGpuKernels();
}
