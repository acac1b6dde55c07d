// The model's settings that Node reads from the environment, each parsed in one place: here. The kernels read them
// through these functions when a backend starts, and `ragen` checks them all before any work (src/cli/envVars.ts),
// so a bad value is one line naming the variable whichever backend runs. In a browser there is no environment and
// every setting is its default.

/** Which attention programs run on webgpu (see registerWebGpuKernels in kernels/webgpu.ts). */
export type AttentionGrouping = 'auto' | 'grouped' | 'per-head';
export const ATTENTION_GROUPINGS: readonly AttentionGrouping[] = ['auto', 'grouped', 'per-head'];

/** Which matmul the model's webgpu matmuls run (webgpuMatMulRoute.ts): f32 (tiled, tfjs) or f16 operands with f32
 *  accumulation on our own pipelines (f16-storage, f16, subgroup-matrix). */
export type WebGpuMatMul = 'tiled' | 'tfjs' | 'f16-storage' | 'f16' | 'subgroup-matrix';
export const WEBGPU_MATMULS: readonly WebGpuMatMul[] = ['tiled', 'tfjs', 'f16-storage', 'f16', 'subgroup-matrix'];

/** A variable's value, or undefined where it is unset or empty (or there is no environment: a browser). */
function envValue(name: string): string | undefined {
  const value = typeof process !== 'undefined' ? process.env?.[name] : undefined;
  return value === undefined || value === '' ? undefined : value;
}

function oneOf<T extends string>(name: string, allowed: readonly T[]): T | undefined {
  const value = envValue(name);
  if (value !== undefined && !(allowed as readonly string[]).includes(value)) {
    throw new Error(
      `${name}=${value.length > 40 ? `${value.slice(0, 40)}…` : value}: expected one of ${allowed.join(', ')} (or unset)`,
    );
  }
  return value as T | undefined;
}

/** RAGEN_WEBGPU_MATMUL: one of WEBGPU_MATMULS, or undefined (the backend's default). */
export function webGpuMatMulFromEnv(): WebGpuMatMul | undefined {
  return oneOf('RAGEN_WEBGPU_MATMUL', WEBGPU_MATMULS);
}

/** RAGEN_WEBGPU_ATTENTION: `auto`, `grouped` or `per-head`, or undefined (auto). */
export function attentionGroupingFromEnv(): AttentionGrouping | undefined {
  return oneOf('RAGEN_WEBGPU_ATTENTION', ATTENTION_GROUPINGS);
}

/** RAGEN_WASM_FMA: `0` (the wasm kernels' SIMD128 build), `1` (relaxed SIMD's fused multiply-add where the engine
 *  has it), or undefined (as 1). See compileWasmKernels in kernels/wasm.ts. */
export function wasmFmaFromEnv(): '0' | '1' | undefined {
  return oneOf('RAGEN_WASM_FMA', ['0', '1'] as const);
}

/** Throws an Error naming the first of the model's variables whose value is not one it accepts. */
export function checkModelEnv(): void {
  webGpuMatMulFromEnv();
  attentionGroupingFromEnv();
  wasmFmaFromEnv();
}
