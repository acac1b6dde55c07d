// wasm's Slice and SplitV, copying only the slice.
//
// tfjs-backend-wasm 4.22's slice first copies its WHOLE input out of the wasm heap (`readSync`, a fresh typed array)
// and then picks the slice from that copy; SplitV does so once per piece. The model slices its stacked weights
// ([layers, ...]) one layer at a time and splits their gradients by name, so a sokoban-tiny step copied each stacked
// tensor several times over: 4 % of a step's main-thread time (a CPU profile, BENCHMARKS.md). Here the slice is read
// through a view of the heap instead, in runs as long as the slice allows. Only bytes move, so every result is
// bit for bit tfjs's. Strings fall back to tfjs's own kernel.
import * as tf from '@tensorflow/tfjs';
import { replaceKernel } from './replaceKernel';

type TensorInfo = { dataId: object; shape: number[]; dtype: string };
type Heap = Float32Array | Int32Array | Uint8Array;
interface WasmBackend {
  makeOutput(shape: number[], dtype: string): TensorInfo;
  typedArrayFromHeap(t: TensorInfo): Heap;
}
type KernelArgs = { inputs: Record<string, TensorInfo>; backend: WasmBackend; attrs: Record<string, unknown> };
type KernelFn = (args: KernelArgs) => TensorInfo | TensorInfo[];

let installed = false;

/**
 * Copies x[begin .. begin + size) (per dimension) into `out`, row-major. The trailing dimensions a slice takes whole
 * join its last partial one into a single contiguous run, so a slice along the first axis is one copy.
 */
export function copySlice(x: Heap, shape: number[], begin: number[], size: number[], out: Heap): void {
  const rank = shape.length;
  if (size.some((s) => s === 0)) return;
  if (rank === 0) return out.set(x.subarray(0, 1));
  let k = rank - 1; // the innermost dimension the slice does not take whole (or 0)
  while (k > 0 && size[k] === shape[k]) k--;
  const strides = new Array<number>(rank);
  for (let d = rank - 1, s = 1; d >= 0; d--) {
    strides[d] = s;
    s *= shape[d];
  }
  const run = size[k] * strides[k];
  const index = new Array<number>(k).fill(0); // position within the outer dimensions 0..k-1
  for (let o = 0; ; o += run) {
    let from = begin[k] * strides[k];
    for (let d = 0; d < k; d++) from += (begin[d] + index[d]) * strides[d];
    if (run < 64)
      for (let i = 0; i < run; i++) out[o + i] = x[from + i]; // cheaper than a subarray for short runs
    else out.set(x.subarray(from, from + run), o);
    let d = k - 1;
    while (d >= 0 && ++index[d] === size[d]) index[d--] = 0;
    if (d < 0) return;
  }
}

function sliceInfo(backend: WasmBackend, x: TensorInfo, begin: number[], size: number[]): TensorInfo {
  const out = backend.makeOutput(size, x.dtype); // may grow the heap: the views are taken after it
  copySlice(backend.typedArrayFromHeap(x), x.shape, begin, size, backend.typedArrayFromHeap(out));
  return out;
}

/** Re-registers wasm's Slice and SplitV as described above. Idempotent; a no-op if wasm is not registered. */
export function installWasmSlice(): void {
  if (installed) return;
  const sliced = replaceKernel<KernelFn>('Slice', 'wasm', (tfjsSlice) => (args) => {
    const x = args.inputs.x;
    if (x.dtype === 'string') return tfjsSlice(args);
    const xt = { shape: x.shape } as tf.Tensor;
    const [begin, size] = tf.slice_util.parseSliceParams(xt, args.attrs.begin as number[], args.attrs.size as number[]);
    return sliceInfo(args.backend, x, begin, size);
  });
  const split = replaceKernel<KernelFn>('SplitV', 'wasm', (tfjsSplitV) => (args) => {
    const x = args.inputs.x;
    if (x.dtype === 'string') return tfjsSplitV(args);
    const { numOrSizeSplits, axis } = args.attrs as { numOrSizeSplits: number | number[]; axis: number };
    const xt = { shape: x.shape } as tf.Tensor;
    const a = tf.util.parseAxisParam(axis, x.shape)[0];
    const begin = new Array<number>(x.shape.length).fill(0);
    return tf.backend_util.prepareSplitSize(xt, numOrSizeSplits, a).map((s) => {
      const size = [...x.shape];
      size[a] = s;
      const piece = sliceInfo(args.backend, x, [...begin], size);
      begin[a] += s;
      return piece;
    });
  });
  installed = sliced || split; // either wrapped: never wrap it twice
}
