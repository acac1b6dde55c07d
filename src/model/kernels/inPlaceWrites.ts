// How many times a tensor's data has been written in place on webgpu since it was made (a program run with an
// existing output: AdamW's per-variable update writes each weight so). Whatever keeps a derived copy of a tensor
// (halfWeights.ts: the f16 copies of the weights) compares counts to know whether its copy is stale.
import type { Info, Program, Uniform } from './webgpuProgram';

const writes = new WeakMap<object, number>();

/** Counts one in-place write of `dataId`. */
export function noteWrite(dataId: object): void {
  writes.set(dataId, (writes.get(dataId) ?? 0) + 1);
}

/** The in-place writes of `dataId` so far. */
export function writeCount(dataId: object): number {
  return writes.get(dataId) ?? 0;
}

type RunProgram = (program: Program, inputs: Info[], dtype: string, uniforms?: Uniform[], output?: Info) => Info;
const watched = new WeakSet<object>();

/** Makes tfjs's runWebGPUProgram on `backend` count a program run with an existing output as a write of it. */
export function watchInPlaceWrites(backend: { runWebGPUProgram: unknown }): void {
  if (watched.has(backend)) return;
  watched.add(backend);
  const run = (backend.runWebGPUProgram as RunProgram).bind(backend);
  backend.runWebGPUProgram = ((program, inputs, dtype, uniforms, output) => {
    if (output) noteWrite(output.dataId);
    return run(program, inputs, dtype, uniforms, output);
  }) as RunProgram;
}
