// Registers the fused kernels (ops.ts) for the backends that have them. initBackend() calls this once the backend
// is up; ops fall back to stock tfjs compositions wherever a kernel is missing, so calling it is an optimisation, not
// a requirement for correctness.
import { registerCpuKernels } from './cpu';
import { registerFusedGradients } from './ops';
import { compileWasmKernels, registerWasmKernels } from './wasm';

export * from './ops';

/** Registers gradients and the cpu and wasm kernels (the wasm module is compiled here, asynchronously). Idempotent. */
export async function registerFusedKernels(): Promise<void> {
  registerFusedGradients();
  registerCpuKernels();
  await compileWasmKernels();
  registerWasmKernels();
}
