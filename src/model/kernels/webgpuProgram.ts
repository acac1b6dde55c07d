// How our WGSL kernels talk to tfjs-backend-webgpu: the fields of its WebGPUProgram that we set (the backend fills in
// the rest), the slice of its backend object the kernels call, and the common one-invocation-per-item program.
// Shared by the fused kernels (webgpu.ts) and the opt-in tiled matmul (webgpuMatmul.ts).
import type * as tf from '@tensorflow/tfjs';

export type Info = { dataId: object; shape: number[]; dtype: tf.DataType };
export type Uniform = { type: 'float32' | 'int32'; data: number[] };

/** The fields of tfjs-backend-webgpu's WebGPUProgram that we set (its other fields are filled in by the backend). */
export interface Program {
  variableNames: string[];
  /** Per input, the vector width its buffer is declared with (array<f32> / array<vec4<f32>> / array<vec2<i32>>). */
  variableComponents?: number[];
  /** The output buffer's vector width (4: array<vec4<f32>>). */
  outputComponent?: number;
  outputShape: number[];
  shaderKey: string;
  dispatchLayout: { x: number[]; y?: number[] };
  dispatch: [number, number, number];
  workgroupSize: [number, number, number];
  uniforms?: string;
  getUserCode(): string;
}

export interface WebGpuBackend {
  runWebGPUProgram(program: Program, inputs: Info[], dtype: tf.DataType, uniforms?: Uniform[], output?: Info): Info;
  incRef(dataId: object): void;
  disposeData(dataId: object): void;
  /** Per tensor: `values` is a CPU copy kept once the tensor has been read back (or before its first upload). */
  tensorMap: { get(dataId: object): { values: unknown } };
}
export type Args = { inputs: Record<string, Info>; backend: WebGpuBackend; attrs: Record<string, unknown> };

/** Invocations per workgroup of the per-item and per-row programs (a power of two: workgroup reductions halve it). */
export const WG = 64;

/** A program with one invocation per work item (`items` of them), 64 to a workgroup. */
export function perItem(
  key: string,
  variableNames: string[],
  outputShape: number[],
  items: number,
  code: string,
  uniforms?: string,
): Program {
  return {
    variableNames,
    outputShape,
    uniforms,
    shaderKey: `ragen_${key}`,
    dispatchLayout: { x: outputShape.map((_, i) => i) },
    dispatch: [Math.max(1, Math.ceil(items / WG)), 1, 1],
    workgroupSize: [WG, 1, 1],
    getUserCode: () => code,
  };
}

/**
 * WGSL `fn NAME(tid : i32, v : f32) -> f32`: v combined over the workgroup of WG invocations (every invocation gets
 * the result) by a tree in the workgroup array `scratch` (WG floats, declared by the caller), `combine(a, b)` being
 * the WGSL of one step (a sum, a max). It holds barriers: call it from uniform control flow.
 */
export function workgroupReduceFn(name: string, scratch: string, combine: (a: string, b: string) => string): string {
  return `
  fn ${name}(tid : i32, v : f32) -> f32 {
    ${scratch}[tid] = v;
    workgroupBarrier();
    for (var stride = ${WG / 2}; stride > 0; stride = stride / 2) {
      if (tid < stride) { ${scratch}[tid] = ${combine(`${scratch}[tid]`, `${scratch}[tid + stride]`)}; }
      workgroupBarrier();
    }
    let total = ${scratch}[0];
    workgroupBarrier();
    return total;
  }`;
}
