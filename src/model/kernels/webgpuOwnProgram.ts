// Compute pipelines of our own on the GPUDevice tfjs's webgpu backend runs on, for shaders that tfjs's
// runWebGPUProgram cannot build: its preamble puts declarations before a program's code, and WGSL wants `enable f16;`,
// `enable subgroups;` and `enable chromium_experimental_subgroup_matrix;` first. Here a program is a whole WGSL module
// of ours, and its dispatch is recorded in tfjs's own command encoder, between tfjs's dispatches, so the order of
// every read and write is the order of the ops (no extra submit, no wait):
// - inputs are tfjs tensors: uploadToGPU gives each a GPUBuffer (the tensorMap entry's `resource`);
// - the output is a tensor tfjs allocates (makeTensorInfo + uploadToGPU, from its buffer pool), or an existing one
//   written in place;
// - the uniforms go to a buffer from tfjs's pool written with queue.writeBuffer, released after the next submit as
//   tfjs releases its own;
// - the dispatch ends tfjs's open compute pass and runs in a pass of its own in tfjs's command encoder; the tensors it
//   binds are marked as owned by the queued commands (a tensor disposed before the submit keeps its buffer until
//   then), and tfjs's submit batching counts it like one of its own dispatches.
// The members of tfjs-backend-webgpu's WebGPUBackend used here are TypeScript-private in its 4.22.0 typings
// (commandEncoder, commandQueueOwnedIds, dispatchCountInPass, uniformPendingDisposal): OwnProgramBackend names them.
//
// Bindings, in this order in @group(0): 0 the output (read_write storage), 1.. the inputs (read-only storage), then
// the uniform buffer when the program has uniforms. Pipelines are created once per key and device.
import * as tf from '@tensorflow/tfjs';
import { noteWrite } from './inPlaceWrites';
import type { Info } from './webgpuProgram';

/** One of our WGSL programs. */
export interface OwnProgram {
  /** One pipeline per key: the WGSL must be the same for every program with this key. */
  key: string;
  /** The whole module, entry point `main`, with the bindings described above. */
  code: () => string;
  /** Workgroups in x, y, z. */
  dispatch: [number, number, number];
  /** The uniform buffer's bytes (u32 / i32 / f32 fields written by the caller), or none. */
  uniforms?: ArrayBuffer;
}

type TensorData = { resource?: unknown; values: unknown; dtype: tf.DataType; shape: number[] };

/** The members of tfjs's WebGPUBackend this module uses. */
export interface OwnProgramBackend {
  device: GPUDevice;
  queue: GPUQueue;
  tensorMap: { get(dataId: object): TensorData };
  bufferManager: { acquireBuffer(size: number, usage: number): GPUBuffer };
  makeTensorInfo(shape: number[], dtype: tf.DataType): Info;
  uploadToGPU(dataId: object): void;
  ensureCommandEncoderReady(): void;
  endComputePassEncoder(): void;
  submitQueue(): void;
  commandEncoder: GPUCommandEncoder;
  commandQueueOwnedIds: WeakSet<object>;
  dispatchCountInPass: number;
  uniformPendingDisposal: GPUBuffer[];
}

const pipelines = new WeakMap<GPUDevice, Map<string, GPUComputePipeline>>();

function pipelineFor(device: GPUDevice, program: OwnProgram, inputs: number): GPUComputePipeline {
  let cache = pipelines.get(device);
  if (!cache) pipelines.set(device, (cache = new Map()));
  const key = `${program.key}|${inputs}|${program.uniforms ? 'u' : ''}`;
  const hit = cache.get(key);
  if (hit) return hit;
  // An explicit layout: with layout 'auto', Dawn drops a binding the shader does not use and the bind group fails.
  const entries: GPUBindGroupLayoutEntry[] = [
    { binding: 0, visibility: GPUShaderStage.COMPUTE, buffer: { type: 'storage' } },
    ...Array.from({ length: inputs }, (_, i) => ({
      binding: i + 1,
      visibility: GPUShaderStage.COMPUTE,
      buffer: { type: 'read-only-storage' as const },
    })),
  ];
  if (program.uniforms) {
    entries.push({ binding: inputs + 1, visibility: GPUShaderStage.COMPUTE, buffer: { type: 'uniform' } });
  }
  const bindGroupLayout = device.createBindGroupLayout({ entries });
  const pipeline = device.createComputePipeline({
    label: `ragen_own_${program.key}`,
    layout: device.createPipelineLayout({ bindGroupLayouts: [bindGroupLayout] }),
    compute: { module: device.createShaderModule({ code: program.code() }), entryPoint: 'main' },
  });
  cache.set(key, pipeline);
  return pipeline;
}

/** How many of our pipelines exist on `device` (for tests: a key is compiled once). */
export function ownPipelineCount(device: GPUDevice): number {
  return pipelines.get(device)?.size ?? 0;
}

/**
 * Runs `program` on tfjs's device with `inputs` bound in order, writing `output`: a new tensor of that shape and
 * dtype, or an existing tensor (written in place; it must not be one of the inputs). Returns the output's info.
 */
export function runOwnProgram(
  backend: OwnProgramBackend,
  program: OwnProgram,
  inputs: Info[],
  output: Info | { shape: number[]; dtype: tf.DataType },
): Info {
  const out = 'dataId' in output ? output : backend.makeTensorInfo(output.shape, output.dtype);
  if ('dataId' in output) noteWrite(out.dataId);
  if (out.shape.some((d) => d === 0) || program.dispatch.some((d) => d === 0)) return out;
  backend.uploadToGPU(out.dataId);
  for (const t of inputs) backend.uploadToGPU(t.dataId);
  const buffer = (t: Info) => backend.tensorMap.get(t.dataId).resource as GPUBuffer;
  const pipeline = pipelineFor(backend.device, program, inputs.length);
  const entries: GPUBindGroupEntry[] = [out, ...inputs].map((t, i) => ({
    binding: i,
    resource: { buffer: buffer(t) },
  }));
  if (program.uniforms) {
    const size = Math.ceil(program.uniforms.byteLength / 16) * 16;
    const uniform = backend.bufferManager.acquireBuffer(size, GPUBufferUsage.COPY_DST | GPUBufferUsage.UNIFORM);
    backend.queue.writeBuffer(uniform, 0, program.uniforms, 0, program.uniforms.byteLength);
    backend.uniformPendingDisposal.push(uniform);
    entries.push({ binding: inputs.length + 1, resource: { buffer: uniform } });
  }
  const bindGroup = backend.device.createBindGroup({ layout: pipeline.getBindGroupLayout(0), entries });
  backend.ensureCommandEncoderReady();
  backend.endComputePassEncoder();
  const pass = backend.commandEncoder.beginComputePass();
  pass.setPipeline(pipeline);
  pass.setBindGroup(0, bindGroup);
  pass.dispatchWorkgroups(...program.dispatch);
  pass.end();
  for (const t of [out, ...inputs]) backend.commandQueueOwnedIds.add(t.dataId);
  // A CPU copy kept from an earlier read-back of an output written in place would now be stale.
  backend.tensorMap.get(out.dataId).values = null;
  backend.dispatchCountInPass++;
  if (backend.dispatchCountInPass >= (tf.env().get('WEBGPU_DEFERRED_SUBMIT_BATCH_SIZE') as number)) {
    backend.submitQueue();
  }
  return out;
}

/** The active webgpu backend as OwnProgramBackend (throws on another backend). */
export function ownProgramBackend(): OwnProgramBackend {
  if (tf.getBackend() !== 'webgpu')
    throw new Error(`our own WebGPU pipelines need the webgpu backend, not ${tf.getBackend()}`);
  return tf.backend() as unknown as OwnProgramBackend;
}

/** A tensor the engine tracks (disposable) for an Info an own program returned outside a kernel. */
export function tensorOf(info: Info): tf.Tensor {
  return tf.engine().makeTensorFromTensorInfo(info, tf.backend());
}

/** Little-endian 32-bit fields for OwnProgram.uniforms: ints written as u32/i32, floats as f32. */
export function uniformWords(fields: Array<{ u32: number } | { i32: number } | { f32: number }>): ArrayBuffer {
  const bytes = new ArrayBuffer(Math.max(16, Math.ceil((fields.length * 4) / 16) * 16));
  const view = new DataView(bytes);
  fields.forEach((f, i) => {
    if ('u32' in f) view.setUint32(4 * i, f.u32, true);
    else if ('i32' in f) view.setInt32(4 * i, f.i32, true);
    else view.setFloat32(4 * i, f.f32, true);
  });
  return bytes;
}
