// AdamW and its gradient norm on webgpu, one variable at a time, in place: the kernels behind AdamW's per-variable
// layout (adamw.ts), which webgpu uses because the flat layout's whole-model temporaries do not fit a 0.5B model.
//
// Why they exist: without them a per-variable step is tfjs's op chain, about 37 dispatches per variable (a sum of
// squares, the update computed twice, finiteness checks), 10,700 of the 13,029 dispatches of a qwen0.5b update on an
// H100 (BENCHMARKS.md). Here it is five per variable: one partial sum of squares, one finiteness check, and one
// in-place write each of the weight, m and v.
//
// In place: a program's output may be an existing tensor (runWebGPUProgram's last argument), and its `result`
// buffer is read-write, so a program reads the old value from `result` and writes the new one. WebGPU does not let
// one dispatch bind a buffer both read-only and writable, so the weight, m and v are written by three programs,
// each taking the other two (still old) as inputs: the weight first (it needs the old m and v), then m, then v.
// The caller (AdamW) makes sure no other tensor shares these buffers (ops.ts, ownData).
//
// Every program reads a uniform (here outShape at least): Dawn drops an unused uniform binding from the pipeline's
// layout, and tfjs's bind group, which always has one, then fails validation.
//
// Finiteness without isFinite: WGSL lets compilers assume floats are finite, so the test looks at the bits (an
// exponent of all ones is Inf or NaN), as tfjs-webgpu's own isnan does.
import type { AdamWAttrs } from './ops';
import { WG, perItem, workgroupReduceFn, type Args, type Info } from './webgpuProgram';

/** Partial sums per variable: at most this many workgroups each (each loops over its share of the variable). */
const MAX_GROUPS = 256;

const flatInfo = (t: Info): Info => ({ dataId: t.dataId, shape: [t.shape.reduce((a, b) => a * b, 1)], dtype: t.dtype });
const groupsFor = (size: number) => Math.max(1, Math.min(MAX_GROUPS, Math.ceil(size / WG)));
const f32 = (...data: number[]) => ({ type: 'float32' as const, data });
const i32 = (...data: number[]) => ({ type: 'int32' as const, data });

const WORKGROUP_SUM = `
  var<workgroup> partial : array<f32, ${WG}>;${workgroupReduceFn('workgroupSum', 'partial', (a, b) => `${a} + ${b}`)}`;

/**
 * The sum of squares of every element of inputs t0..t{n-1}, as a scalar: per tensor, `groupsFor(size)` workgroups
 * write partial sums into one shared buffer (each at its own offset), then one workgroup adds the partials. The
 * order of every addition is fixed, so the result is the same on every run.
 */
function sumSquares({ inputs, backend, attrs }: Args): Info {
  const n = attrs.n as number;
  const tensors = Array.from({ length: n }, (_, i) => flatInfo(inputs[`t${i}`]));
  const groups = tensors.map((t) => groupsFor(t.shape[0]));
  const total = groups.reduce((a, b) => a + b, 0);
  const partials = backend.runWebGPUProgram(
    perItem(
      'sumsq_zero',
      [],
      [total],
      total,
      `fn main(index : i32) { if (index < uniforms.outShape) { result[index] = 0.0; } }`,
    ),
    [],
    'float32',
  );
  const partialCode = `${WORKGROUP_SUM}
  fn main(index : i32) {
    let tid = i32(localId.x);
    var s = 0.0;
    for (var i = index; i < uniforms.xShape; i = i + uniforms.groups * ${WG}) { let v = x[i]; s = s + v * v; }
    let sum = workgroupSum(tid, s);
    if (tid == 0) { result[uniforms.offset + index / ${WG}] = sum; }
  }`;
  let offset = 0;
  tensors.forEach((t, i) => {
    if (t.shape[0] > 0) {
      backend.runWebGPUProgram(
        perItem('sumsq_partial', ['x'], [total], groups[i] * WG, partialCode, 'offset : i32, groups : i32,'),
        [t],
        'float32',
        [i32(offset), i32(groups[i])],
        partials,
      );
    }
    offset += groups[i];
  });
  const totalCode = `${WORKGROUP_SUM}
  fn main(index : i32) {
    let tid = i32(localId.x);
    var s = 0.0;
    for (var i = tid; i < uniforms.partialsShape; i = i + ${WG}) { s = s + partials[i]; }
    let sum = workgroupSum(tid, s);
    if (tid == 0) { result[0] = sum; }
  }`;
  const out = backend.runWebGPUProgram(perItem('sumsq_total', ['partials'], [1], WG, totalCode), [partials], 'float32');
  backend.disposeData(partials.dataId);
  return { ...out, shape: [] };
}

const ADAMW_UNIFORMS =
  'coef : f32, decay : f32, b1 : f32, omb1 : f32, b2 : f32, omb2 : f32, stepSize : f32, bc2 : f32, eps : f32,';
const adamWUniforms = (a: AdamWAttrs) => [
  f32(a.coef),
  f32(a.decay),
  f32(a.b1),
  f32(a.omb1),
  f32(a.b2),
  f32(a.omb2),
  f32(a.stepSize),
  f32(a.bc2),
  f32(a.eps),
];

// The update of one element, in the order and float32 roundings of cpu.ts's adamW (and of AdamW.updateOne).
const UPDATE = `
  fn newM(m : f32, g : f32) -> f32 { return m * uniforms.b1 + g * uniforms.omb1; }
  fn newV(v : f32, g : f32) -> f32 { return v * uniforms.b2 + (g * g) * uniforms.omb2; }
  fn newP(p : f32, m : f32, v : f32) -> f32 {
    let den = sqrt(v) / uniforms.bc2 + uniforms.eps;
    return p * uniforms.decay - (m / den) * uniforms.stepSize;
  }
  fn finite(x : f32) -> bool { return (bitcast<u32>(x) & 0x7f800000u) != 0x7f800000u; }`;

/** The inputs p{i}, g{i}, m{i}, v{i} of variable i, flattened. */
function variableInputs(inputs: Args['inputs'], i: number) {
  const [p, g, m, v] = ['p', 'g', 'm', 'v'].map((k) => flatInfo(inputs[`${k}${i}`]));
  return { p, g, m, v, size: p.shape[0] };
}

/**
 * Whether AdamW's update (attrs) of every variable i (weight p{i}, gradient g{i}, moments m{i} and v{i}) gives a
 * finite weight and moments: an int32 [1] tensor, 1 or 0. Nothing is written.
 */
function adamWCheck({ inputs, backend, attrs }: Args): Info {
  const a = attrs as unknown as AdamWAttrs & { n: number };
  const flag = backend.runWebGPUProgram(
    perItem('adamw_flag', [], [1], 1, `fn main(index : i32) { if (index < uniforms.outShape) { result[index] = 1; } }`),
    [],
    'int32',
  );
  const code = `${UPDATE}
  fn main(index : i32) {
    if (index >= uniforms.p1Shape) { return; }
    let g = grad[index] * uniforms.coef;
    let m = newM(m1[index], g);
    let v = newV(v1[index], g);
    let p = newP(p1[index], m, v);
    if (!(finite(p) && finite(m) && finite(v))) { result[0] = 0; }
  }`;
  for (let i = 0; i < a.n; i++) {
    const { p, g, m, v, size } = variableInputs(inputs, i);
    if (size === 0) continue;
    // (Inputs p1, m1, v1 rather than p, m, v, which would clash with the local names of the WGSL.)
    backend.runWebGPUProgram(
      perItem('adamw_check', ['p1', 'grad', 'm1', 'v1'], [1], size, code, ADAMW_UNIFORMS),
      [p, g, m, v],
      'int32',
      adamWUniforms(a),
      flag,
    );
  }
  return flag;
}

/**
 * AdamW's update (attrs) written in place into every weight p{i} and its moments m{i}, v{i} (gradients g{i}).
 * Returns `flag` (an input, passed through) so that the kernel has an output; call it after adamWCheck said 1.
 */
function adamWWrite({ inputs, backend, attrs }: Args): Info {
  const a = attrs as unknown as AdamWAttrs & { n: number };
  const guard = 'if (index >= uniforms.outShape) { return; }\n    let g = grad[index] * uniforms.coef;';
  const weight = `${UPDATE}
  fn main(index : i32) {
    ${guard}
    result[index] = newP(result[index], newM(m1[index], g), newV(v1[index], g));
  }`;
  const moment1 = `${UPDATE}
  fn main(index : i32) {
    ${guard}
    result[index] = newM(result[index], g);
  }`;
  const moment2 = `${UPDATE}
  fn main(index : i32) {
    ${guard}
    result[index] = newV(result[index], g);
  }`;
  const u = adamWUniforms(a);
  for (let i = 0; i < a.n; i++) {
    const { p, g, m, v, size } = variableInputs(inputs, i);
    if (size === 0) continue;
    backend.runWebGPUProgram(
      perItem('adamw_write_p', ['grad', 'm1', 'v1'], [size], size, weight, ADAMW_UNIFORMS),
      [g, m, v],
      'float32',
      u,
      p,
    );
    backend.runWebGPUProgram(
      perItem('adamw_write_m', ['grad'], [size], size, moment1, ADAMW_UNIFORMS),
      [g],
      'float32',
      u,
      m,
    );
    backend.runWebGPUProgram(
      perItem('adamw_write_v', ['grad'], [size], size, moment2, ADAMW_UNIFORMS),
      [g],
      'float32',
      u,
      v,
    );
    // A CPU copy kept from an earlier read-back would now be stale (runWebGPUProgram uploaded it before writing).
    for (const t of [p, m, v]) backend.tensorMap.get(t.dataId).values = null;
  }
  const flag = inputs.flag;
  backend.incRef(flag.dataId);
  return { ...flag };
}

export const webGpuAdamWKernels = { sumSquares, adamWCheck, adamWWrite };
