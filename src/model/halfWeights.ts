// f16 copies of the model's weights for the f16 matmuls (webgpuMatMulRoute.ts's f16 modes), kept next to the f32
// weights the optimizer updates, as mixed-precision training keeps its f32 master copy: a weight is read at half the
// bytes, and every optimizer step still adds its update to f32 values.
//
// A matmul operand is a weight when its data is a tf.Variable's. Its copy (packHalfFlat: int32 words of two f16) is
// made on first use and made again when the weight has changed since:
// - tf.Variable.assign (a checkpoint load, LoRA's merge, the flat AdamW layout) gives the variable new data, so the
//   copy of the old data is dropped and a new one made;
// - AdamW's per-variable kernels on webgpu write the weight's buffer in place: every program run with an existing
//   output counts as a write of that output (watchInPlaceWrites, and runOwnProgram's own count), and a copy made
//   before the last write is made again.
// Copies are backend data outside tfjs's engine (no tensors in tf.memory().numTensors); releaseHalfWeights frees them.
import * as tf from '@tensorflow/tfjs';
import { packHalfFlat } from './kernels/webgpuHalfMatmul';
import { writeCount } from './kernels/inPlaceWrites';
import type { OwnProgramBackend } from './kernels/webgpuOwnProgram';
import type { Info } from './kernels/webgpuProgram';

interface Copy {
  /** The variable's data the copy was made from, and its write count then. */
  dataId: object;
  writes: number;
  half: Info;
  backend: OwnProgramBackend & { disposeData(dataId: object): void };
}

const copies = new Map<string, Copy>();
/** Data seen not to be any variable's (activations): looked up once. */
let notWeights = new WeakSet<object>();

/** The name of the variable whose data is `dataId`, or null. */
function variableOf(dataId: object): string | null {
  for (const [name, v] of Object.entries(tf.engine().registeredVariables)) if (v.dataId === dataId) return name;
  return null;
}

/** Drops the copies of variables that are gone or hold other data now (done before each new copy is made). */
export function pruneHalfWeights(): void {
  const vars = tf.engine().registeredVariables;
  for (const [name, c] of copies) {
    if (vars[name]?.dataId !== c.dataId) {
      c.backend.disposeData(c.half.dataId);
      copies.delete(name);
    }
  }
}

/** The f16 copy of `x` when x is a weight (a variable's data), made or refreshed as needed; null otherwise. */
export function halfWeightFor(
  backend: OwnProgramBackend & { disposeData(dataId: object): void },
  x: Info,
): Info | null {
  if (x.dtype !== 'float32' || notWeights.has(x.dataId)) return null;
  for (const c of copies.values()) {
    if (c.dataId === x.dataId) {
      const writes = writeCount(x.dataId);
      if (c.writes !== writes) {
        packHalfFlat(backend, x, c.half); // in place, into the same words
        c.writes = writes;
      }
      return c.half;
    }
  }
  const name = variableOf(x.dataId);
  if (!name) {
    notWeights.add(x.dataId);
    return null;
  }
  pruneHalfWeights();
  const copy: Copy = { dataId: x.dataId, writes: writeCount(x.dataId), half: packHalfFlat(backend, x), backend };
  copies.set(name, copy);
  return copy.half;
}

/** How many weights have an f16 copy now. */
export function halfWeightCount(): number {
  return copies.size;
}

/** Frees every f16 copy (they are made again on use). */
export function releaseHalfWeights(): void {
  for (const c of copies.values()) c.backend.disposeData(c.half.dataId);
  copies.clear();
  notWeights = new WeakSet();
}
