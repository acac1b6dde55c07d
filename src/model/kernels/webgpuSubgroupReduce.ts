// A row reduction with subgroup operations (`enable subgroups;`, devices with the `subgroups` feature), on our own
// pipeline (webgpuOwnProgram.ts): the sum, the sum of squares (a norm's) or the max (a softmax's) of every row of a
// float32 [R, C] tensor. One workgroup of 64 invocations per row: each invocation folds its share of the row, the
// subgroup combines its values with subgroupAdd / subgroupMax (no workgroup memory, no barrier), and one value per
// subgroup goes through workgroup memory to invocation 0. The workgroup-memory tree of tfjs-style kernels
// (webgpuProgram.ts's workgroupReduceFn) takes log2(64) = 6 barriers for the same.
import { runOwnProgram, uniformWords, type OwnProgramBackend } from './webgpuOwnProgram';
import type { Info } from './webgpuProgram';

export type RowReduction = 'sum' | 'sumSquares' | 'max';

const WG = 64;

/** The WGSL of one reduction: entry `main`, output [R], input x [R, C] flattened, uniforms R and C. */
export function subgroupRowReduceWgsl(op: RowReduction): string {
  const isMax = op === 'max';
  const init = isMax ? '-3.4028234663852886e38' : '0.0';
  const fold = isMax ? 'max(acc, v)' : op === 'sumSquares' ? 'acc + v * v' : 'acc + v';
  const combine = isMax ? 'subgroupMax' : 'subgroupAdd';
  const join = isMax ? 'max(total, partial[i])' : 'total + partial[i]';
  return `enable subgroups;
@group(0) @binding(0) var<storage, read_write> result : array<f32>;
@group(0) @binding(1) var<storage, read> x : array<f32>;
struct Uniforms { R : u32, C : u32 }
@group(0) @binding(2) var<uniform> uniforms : Uniforms;
var<workgroup> partial : array<f32, ${WG}>;

@compute @workgroup_size(${WG})
fn main(@builtin(workgroup_id) wg : vec3<u32>, @builtin(num_workgroups) groups : vec3<u32>,
        @builtin(local_invocation_index) li : u32, @builtin(subgroup_invocation_id) lane : u32,
        @builtin(subgroup_size) width : u32) {
  let row = wg.x + wg.y * groups.x;
  var acc = ${init};
  if (row < uniforms.R) {
    for (var c = li; c < uniforms.C; c = c + ${WG}u) { let v = x[row * uniforms.C + c]; acc = ${fold}; }
  }
  let mine = ${combine}(acc);
  if (lane == 0u) { partial[li / width] = mine; }
  workgroupBarrier();
  if (li == 0u && row < uniforms.R) {
    var total = partial[0];
    for (var i = 1u; i < ${WG}u / width; i = i + 1u) { total = ${join}; }
    result[row] = total;
  }
}`;
}

/** `op` over each row of x (float32 [R, C]): float32 [R]. Needs a device with `subgroups`. */
export function subgroupRowReduce(backend: OwnProgramBackend, x: Info, op: RowReduction): Info {
  if (x.shape.length !== 2) throw new Error(`subgroupRowReduce: a 2-D tensor, got [${x.shape}]`);
  const [R, C] = x.shape;
  const across = Math.min(Math.max(R, 1), 65535);
  return runOwnProgram(
    backend,
    {
      key: `subgroup_row_${op}`,
      code: () => subgroupRowReduceWgsl(op),
      dispatch: [across, Math.ceil(R / across), 1],
      uniforms: uniformWords([{ u32: R }, { u32: C }]),
    },
    [x],
    { shape: [R], dtype: 'float32' },
  );
}
