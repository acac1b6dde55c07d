// The fused kernels on tfjs's webgpu backend: WGSL compute programs run through the backend's own program
// interface (`runWebGPUProgram`), the way tfjs-backend-webgpu's stock kernels are written. The semantics are those
// of cpu.ts (the reference); only the parallel decomposition differs.
//
// How a program is put together by tfjs (tfjs-backend-webgpu/dist/webgpu_program.js, makeShader):
// - each name in `variableNames` becomes a read-only storage buffer of that name (array<f32>, or array<i32> for
//   int32 tensors), and its shape is in `uniforms.<name>Shape`; the output is the read-write buffer `result`;
// - `uniforms` adds program-specific fields after the shapes (their values are passed to runWebGPUProgram in order);
// - the user code defines `fn main(index : i32)`, called once per invocation with the flat invocation index;
//   `localId` is the invocation's id inside its workgroup;
// - compiled pipelines are cached by `shaderKey` plus the ranks and dtypes of the tensors (not their sizes), so
//   every constant baked into the WGSL text (head counts, head size, workgroup size) is part of the shaderKey.
// One program writes one output tensor, so a kernel with several outputs runs several programs.
// A buffer's element type is that of the data, not of the tensor: tfjs-webgpu casts int32 to float32 by relabelling
// the int32 buffer, so an integer-valued input (mask, positions, targets) is read through f32(...) or i32(...).
//
// The KV-cache kernel writes the new keys and values into the cache tensors it is given and returns them as
// outputs sharing their buffers, exactly as the cpu and wasm kernels do (see wasm.ts for why that is safe in
// generate.ts): the cache rows are written by running a program with the cache itself as its output tensor.
import { registerKernelTable, type HeadAttrs } from './ops';
import { webGpuAdamWKernels } from './webgpuAdamW';
import { webGpuMatmulKernels } from './webgpuMatmul';
import {
  WG,
  perItem,
  workgroupReduceFn,
  type Args,
  type Info,
  type Program,
  type Uniform,
  type WebGpuBackend,
} from './webgpuProgram';
import { ATTENTION_GROUPINGS, attentionGroupingFromEnv, type AttentionGrouping } from '../envSettings';

/** A program with one workgroup of 64 invocations per row, which cooperate through workgroup memory. */
function perRow(
  key: string,
  variableNames: string[],
  outputShape: number[],
  rows: number,
  code: string,
  uniforms?: string,
): Program {
  return perItem(key, variableNames, outputShape, rows * WG, code, uniforms);
}

const f32 = (...data: number[]): Uniform => ({ type: 'float32', data });
const i32 = (...data: number[]): Uniform => ({ type: 'int32', data });

// WGSL for the perRow programs: workgroup memory (one slot per invocation; logitStats merges three numbers, the
// others one) and a tree reduction over the workgroup. Barriers must stay in uniform control flow, so no
// invocation returns early: the workgroup's row is clamped for reads, and writes are guarded.
const ROW_HEADER = `
  const WG = ${WG};
  var<workgroup> partial : array<f32, ${WG}>;
  var<workgroup> partial2 : array<f32, ${WG}>;
  var<workgroup> partial3 : array<f32, ${WG}>;

${workgroupReduceFn('workgroupSum', 'partial', (a, b) => `${a} + ${b}`)}
`;

/**
 * WGSL: the opening lines of a perRow program over the rows of input `x` ([rows, width]): `tid`, the invocation's
 * id in its workgroup; `rows`; the row width, named `width`; `row`, the workgroup's row; and `r`, that row clamped
 * into range for reads (no invocation returns early: see ROW_HEADER).
 */
function rowStart(x: string, width: string): string {
  return `
    let tid = i32(localId.x);
    let rows = uniforms.${x}Shape[0];
    let ${width} = uniforms.${x}Shape[1];
    let row = index / WG;
    let r = min(row, rows - 1);`;
}

// A float below every score, standing for -infinity (WGSL has no infinity literal; exp(NEG - x) is 0).
const NEG = '-3.0e38';

// ---------------------------------------------------------------------------------------------------------------
// Embedding lookup (also the generation session's row copy) and its gradient

function embed({ inputs: { table, ids }, backend }: Args): Info {
  const n = ids.shape[0],
    H = table.shape[1];
  // One invocation per output element: row i of the output is row ids[i] of the table.
  const code = `
  fn main(index : i32) {
    let H = uniforms.tableShape[1];
    if (index >= uniforms.outShape[0] * H) { return; }
    let i = index / H;
    result[index] = table[i32(ids[i]) * H + index - i * H];
  }`;
  return backend.runWebGPUProgram(perItem('embed', ['table', 'ids'], [n, H], n * H, code), [table, ids], 'float32');
}

function embedGrad({ inputs: { dy, ids }, backend, attrs }: Args): Info {
  const [n, H] = dy.shape,
    V = attrs.vocabSize as number;
  // Rows of dy with the same id are summed in index order (as on cpu), without atomics, so the result is the same
  // on every run. One invocation per token i: whether i is its id's first occurrence, and the next occurrence.
  // Output [n, 2] int32: (next index with the same id or -1, 1 if i is the first occurrence).
  const linkCode = `
  fn main(index : i32) {
    let n = uniforms.idsShape;
    if (index >= n) { return; }
    let id = i32(ids[index]);
    var first = 1;
    var next = -1;
    for (var j = 0; j < n; j = j + 1) {
      if (i32(ids[j]) != id) { continue; }
      if (j < index) { first = 0; }
      if (j > index && next < 0) { next = j; }
    }
    result[2 * index] = next;
    result[2 * index + 1] = first;
  }`;
  const links = backend.runWebGPUProgram(perItem('embed_grad_links', ['ids'], [n, 2], n, linkCode), [ids], 'int32');
  // One invocation per element of the gradient table: zero (rows no token uses stay zero).
  const zeroCode = `
  fn main(index : i32) {
    if (index < uniforms.outShape[0] * uniforms.outShape[1]) { result[index] = 0.0; }
  }`;
  const grad = backend.runWebGPUProgram(perItem('embed_grad_zero', [], [V, H], V * H, zeroCode), [], 'float32');
  // One invocation per (first occurrence i, column d): the sum of dy[j, d] over the occurrences j of ids[i], written
  // into row ids[i] of the zeroed table (the program's output is that table).
  const sumCode = `
  fn main(index : i32) {
    let H = uniforms.dyShape[1];
    if (index >= uniforms.dyShape[0] * H) { return; }
    let i = index / H;
    let d = index - i * H;
    if (links[2 * i + 1] == 0) { return; }
    var s = 0.0;
    for (var j = i; j >= 0; j = links[2 * j]) { s = s + dy[j * H + d]; }
    result[i32(ids[i]) * H + d] = s;
  }`;
  backend.runWebGPUProgram(
    perItem('embed_grad_sum', ['dy', 'ids', 'links'], [V, H], n * H, sumCode),
    [dy, ids, links],
    'float32',
    undefined,
    grad,
  );
  disposeIntermediate(backend, links);
  return grad;
}

// ---------------------------------------------------------------------------------------------------------------
// RMSNorm

function rmsNorm({ inputs: { x, weight }, backend, attrs }: Args): Info {
  const [rows] = x.shape;
  // One workgroup per row: the sum of squares, then y = x / rms(x) * weight.
  const code = `${ROW_HEADER}
  fn main(index : i32) {${rowStart('x', 'H')}
    var ss = 0.0;
    for (var i = tid; i < H; i = i + WG) { let v = x[r * H + i]; ss = ss + v * v; }
    let inv = 1.0 / sqrt(workgroupSum(tid, ss) / f32(H) + uniforms.eps);
    if (row < rows) {
      for (var i = tid; i < H; i = i + WG) { result[r * H + i] = x[r * H + i] * inv * weight[i]; }
    }
  }`;
  return backend.runWebGPUProgram(
    perRow('rmsnorm', ['x', 'weight'], x.shape, rows, code, 'eps : f32,'),
    [x, weight],
    'float32',
    [f32(attrs.eps as number)],
  );
}

function rmsNormGrad({ inputs: { dy, x, weight }, backend, attrs }: Args): Info[] {
  const [rows, H] = x.shape;
  // One workgroup per row: inv = 1 / rms(x) and c = sum(w dy x) inv^3 / H, the two numbers dx needs.
  const stats = `${ROW_HEADER}
  fn main(index : i32) {${rowStart('x', 'H')}
    var ss = 0.0;
    var g = 0.0;
    for (var i = tid; i < H; i = i + WG) {
      let xi = x[r * H + i];
      ss = ss + xi * xi;
      g = g + weight[i] * dy[r * H + i] * xi;
    }
    let inv = 1.0 / sqrt(workgroupSum(tid, ss) / f32(H) + uniforms.eps);
    let c = workgroupSum(tid, g) * inv * inv * inv / f32(H);
    if (row < rows && tid == 0) { result[2 * r] = inv; result[2 * r + 1] = c; }
  }`;
  const rowStats = backend.runWebGPUProgram(
    perRow('rmsnorm_grad_stats', ['dy', 'x', 'weight'], [rows, 2], rows, stats, 'eps : f32,'),
    [dy, x, weight],
    'float32',
    [f32(attrs.eps as number)],
  );
  // One invocation per element of x: dx = inv w dy - c x.
  const dxCode = `
  fn main(index : i32) {
    let H = uniforms.xShape[1];
    if (index >= uniforms.xShape[0] * H) { return; }
    let r = index / H;
    let i = index - r * H;
    result[index] = rowStats[2 * r] * weight[i] * dy[index] - rowStats[2 * r + 1] * x[index];
  }`;
  const dx = backend.runWebGPUProgram(
    perItem('rmsnorm_grad_dx', ['dy', 'x', 'weight', 'rowStats'], x.shape, rows * H, dxCode),
    [dy, x, weight, rowStats],
    'float32',
  );
  // One invocation per column i of the weight: dw[i] = sum over rows of dy x inv.
  const dwCode = `
  fn main(index : i32) {
    let rows = uniforms.xShape[0];
    let H = uniforms.xShape[1];
    if (index >= H) { return; }
    var s = 0.0;
    for (var r = 0; r < rows; r = r + 1) { s = s + dy[r * H + index] * x[r * H + index] * rowStats[2 * r]; }
    result[index] = s;
  }`;
  const dw = backend.runWebGPUProgram(
    perItem('rmsnorm_grad_dw', ['dy', 'x', 'rowStats'], [H], H, dwCode),
    [dy, x, rowStats],
    'float32',
  );
  disposeIntermediate(backend, rowStats);
  return [dx, dw];
}

/** Frees a tensor a kernel made for its own use (the engine never sees it). */
function disposeIntermediate(backend: WebGpuBackend, t: Info): void {
  backend.disposeData(t.dataId);
}

// ---------------------------------------------------------------------------------------------------------------
// RoPE, SwiGLU: element-wise

function rope({ inputs: { x, positions, cos, sin }, backend, attrs }: Args): Info {
  const [rows, W] = x.shape;
  const { rotatedHeads, headDim: hd, inverse } = attrs as { rotatedHeads: number; headDim: number; inverse: boolean };
  // One invocation per element: in the first `rotatedHeads` heads, element i < hd/2 of a head pairs with element
  // i + hd/2 (rotate-half); the rest of the row is copied. The inverse rotation (the gradient) negates sin.
  const code = `
  const HD = ${hd};
  const HALF = ${hd / 2};
  fn main(index : i32) {
    let W = uniforms.xShape[1];
    if (index >= uniforms.xShape[0] * W) { return; }
    let r = index / W;
    let col = index - r * W;
    if (col >= uniforms.rotated * HD) { result[index] = x[index]; return; }
    let i = col % HD;
    let k = select(i - HALF, i, i < HALF);   // the angle index, shared by the pair
    let c = cosTable[i32(positions[r]) * HD + k];
    let s = uniforms.sign * sinTable[i32(positions[r]) * HD + k];
    if (i < HALF) {
      result[index] = x[index] * c - x[index + HALF] * s;
    } else {
      result[index] = x[index] * c + x[index - HALF] * s;
    }
  }`;
  return backend.runWebGPUProgram(
    perItem(
      `rope_${hd}`,
      ['x', 'positions', 'cosTable', 'sinTable'],
      x.shape,
      rows * W,
      code,
      'rotated : i32, sign : f32,',
    ),
    [x, positions, cos, sin],
    'float32',
    [i32(rotatedHeads), f32(inverse ? -1 : 1)],
  );
}

const SIGMOID = 'fn sigmoid(g : f32) -> f32 { return 1.0 / (1.0 + exp(-g)); }';

function swiGlu({ inputs: { gu }, backend }: Args): Info {
  const [rows, I2] = gu.shape,
    I = I2 / 2;
  // One invocation per output element: silu(gate) * up, gate and up being the two halves of the row.
  const code = `${SIGMOID}
  fn main(index : i32) {
    let I = uniforms.guShape[1] / 2;
    if (index >= uniforms.guShape[0] * I) { return; }
    let r = index / I;
    let i = index - r * I;
    let g = gu[r * 2 * I + i];
    result[index] = g * sigmoid(g) * gu[r * 2 * I + I + i];
  }`;
  return backend.runWebGPUProgram(perItem('swiglu', ['gu'], [rows, I], rows * I, code), [gu], 'float32');
}

function swiGluGrad({ inputs: { dy, gu }, backend }: Args): Info {
  const [rows, I2] = gu.shape;
  // One invocation per element of gu: the gate half gets dy up silu'(gate), the up half dy silu(gate).
  const code = `${SIGMOID}
  fn main(index : i32) {
    let I2 = uniforms.guShape[1];
    let I = I2 / 2;
    if (index >= uniforms.guShape[0] * I2) { return; }
    let r = index / I2;
    let col = index - r * I2;
    let i = select(col - I, col, col < I);
    let g = gu[r * I2 + i];
    let s = sigmoid(g);
    let d = dy[r * I + i];
    if (col < I) {
      result[index] = d * gu[r * I2 + I + i] * s * (1.0 + g * (1.0 - s));
    } else {
      result[index] = d * g * s;
    }
  }`;
  return backend.runWebGPUProgram(perItem('swiglu_grad', ['dy', 'gu'], gu.shape, rows * I2, code), [dy, gu], 'float32');
}

// ---------------------------------------------------------------------------------------------------------------
// Token log-probs and entropy; sampling

/**
 * [rows, 2]: log-sum-exp and entropy of softmax(logits / T) per row. One workgroup per row, one pass over the row:
 * each invocation keeps a running max m, s = sum exp(z - m) and t = sum exp(z - m) z over its columns, and the
 * workgroup merges them. entropy = lse - sum(p z).
 */
function logitStats(backend: WebGpuBackend, logits: Info, invT: number): Info {
  const code = `${ROW_HEADER}
  fn main(index : i32) {${rowStart('logits', 'V')}
    var m = ${NEG};
    var s = 0.0;
    var t = 0.0;
    for (var i = tid; i < V; i = i + WG) {
      let z = logits[r * V + i] * uniforms.invT;
      let mNew = max(m, z);
      let rescale = exp(m - mNew);
      let p = exp(z - mNew);
      s = s * rescale + p;
      t = t * rescale + p * z;
      m = mNew;
    }
    partial[tid] = m;
    partial2[tid] = s;
    partial3[tid] = t;
    workgroupBarrier();
    for (var stride = WG / 2; stride > 0; stride = stride / 2) {
      if (tid < stride) {
        let m1 = partial[tid];
        let m2 = partial[tid + stride];
        let mm = max(m1, m2);
        let a = exp(m1 - mm);
        let b = exp(m2 - mm);
        partial[tid] = mm;
        partial2[tid] = partial2[tid] * a + partial2[tid + stride] * b;
        partial3[tid] = partial3[tid] * a + partial3[tid + stride] * b;
      }
      workgroupBarrier();
    }
    if (row < rows && tid == 0) {
      let lse = partial[0] + log(partial2[0]);
      result[2 * r] = lse;
      result[2 * r + 1] = lse - partial3[0] / partial2[0];
    }
  }`;
  const rows = logits.shape[0];
  return backend.runWebGPUProgram(
    perRow('logit_stats', ['logits'], [rows, 2], rows, code, 'invT : f32,'),
    [logits],
    'float32',
    [f32(invT)],
  );
}

function logProbs({ inputs: { logits, targets }, backend, attrs }: Args): Info[] {
  const rows = logits.shape[0],
    invT = 1 / (attrs.temperature as number);
  const stats = logitStats(backend, logits, invT);
  // One invocation per row: log p(target) = z[target] / T - lse, or 0 without a target.
  const lpCode = `
  fn main(index : i32) {
    let V = uniforms.logitsShape[1];
    if (index >= uniforms.logitsShape[0]) { return; }
    let t = i32(targetIds[index]);
    let picked = logits[index * V + max(t, 0)] * uniforms.invT - rowStats[2 * index];
    result[index] = select(0.0, picked, t >= 0);
  }`;
  const lp = backend.runWebGPUProgram(
    perItem('logprob_pick', ['logits', 'targetIds', 'rowStats'], [rows], rows, lpCode, 'invT : f32,'),
    [logits, targets, stats],
    'float32',
    [f32(invT)],
  );
  // One invocation per row: the entropy column of the row statistics.
  const entCode = `
  fn main(index : i32) {
    if (index >= uniforms.outShape) { return; }
    result[index] = rowStats[2 * index + 1];
  }`;
  const ent = backend.runWebGPUProgram(
    perItem('logprob_entropy', ['rowStats'], [rows], rows, entCode),
    [stats],
    'float32',
  );
  disposeIntermediate(backend, stats);
  return [lp, ent];
}

function logProbsGrad({ inputs: { dLogProbs, dEntropy, logits, targets }, backend, attrs }: Args): Info {
  const [rows, V] = logits.shape,
    invT = 1 / (attrs.temperature as number);
  const stats = logitStats(backend, logits, invT);
  // One invocation per logit: with log p = z/T - lse and H the entropy,
  // dz = -(p (g + gH (log p + H))) / T, plus g / T at the target (g = 0 for a row without target).
  const code = `
  fn main(index : i32) {
    let V = uniforms.logitsShape[1];
    if (index >= uniforms.logitsShape[0] * V) { return; }
    let r = index / V;
    let i = index - r * V;
    let t = i32(targetIds[r]);
    let g = select(0.0, dLogProbs[r], t >= 0);
    let H = rowStats[2 * r + 1];
    let logp = logits[index] * uniforms.invT - rowStats[2 * r];
    var d = -(exp(logp) * (g + dEntropy[r] * (logp + H)));
    if (i == t) { d = d + g; }
    result[index] = uniforms.invT * d;
  }`;
  const dz = backend.runWebGPUProgram(
    perItem(
      'logprob_grad',
      ['dLogProbs', 'dEntropy', 'logits', 'targetIds', 'rowStats'],
      [rows, V],
      rows * V,
      code,
      'invT : f32,',
    ),
    [dLogProbs, dEntropy, logits, targets, stats],
    'float32',
    [f32(invT)],
  );
  disposeIntermediate(backend, stats);
  return dz;
}

function sample({ inputs: { logits, uniforms }, backend, attrs }: Args): Info {
  const rows = logits.shape[0],
    invT = 1 / (attrs.temperature as number);
  // One workgroup per row: the first token whose cumulative exp(z/T - max) reaches u times the total (else V - 1).
  // Each invocation owns a contiguous chunk of the vocabulary: chunk maxima and sums, a prefix over the chunks, then
  // each invocation scans its own chunk from its prefix and the workgroup takes the smallest crossing.
  const code = `${ROW_HEADER}
  var<workgroup> rowTotal : f32;
  fn main(index : i32) {${rowStart('logits', 'V')}
    let chunk = (V + WG - 1) / WG;
    let start = min(tid * chunk, V);
    let end = min(start + chunk, V);
    var m = ${NEG};
    for (var i = start; i < end; i = i + 1) { m = max(m, logits[r * V + i] * uniforms.invT); }
    partial[tid] = m;
    workgroupBarrier();
    for (var stride = WG / 2; stride > 0; stride = stride / 2) {
      if (tid < stride) { partial[tid] = max(partial[tid], partial[tid + stride]); }
      workgroupBarrier();
    }
    let rowMax = partial[0];
    var s = 0.0;
    for (var i = start; i < end; i = i + 1) { s = s + exp(logits[r * V + i] * uniforms.invT - rowMax); }
    partial2[tid] = s;
    workgroupBarrier();
    if (tid == 0) {   // exclusive prefix over the chunks, in order
      var acc = 0.0;
      for (var t = 0; t < WG; t = t + 1) { let c = partial2[t]; partial2[t] = acc; acc = acc + c; }
      rowTotal = acc;
    }
    workgroupBarrier();
    let threshold = f32(draws[r]) * rowTotal;
    var cum = partial2[tid];
    var pick = V - 1;
    for (var i = start; i < end; i = i + 1) {
      cum = cum + exp(logits[r * V + i] * uniforms.invT - rowMax);
      if (cum >= threshold) { pick = i; break; }
    }
    partial3[tid] = f32(pick);   // exact: token ids are far below 2^24
    workgroupBarrier();
    for (var stride = WG / 2; stride > 0; stride = stride / 2) {
      if (tid < stride) { partial3[tid] = min(partial3[tid], partial3[tid + stride]); }
      workgroupBarrier();
    }
    if (row < rows && tid == 0) { result[r] = i32(partial3[0]); }
  }`;
  return backend.runWebGPUProgram(
    perRow('sample', ['logits', 'draws'], [rows], rows, code, 'invT : f32,'),
    [logits, uniforms],
    'int32',
    [f32(invT)],
  );
}

// ---------------------------------------------------------------------------------------------------------------
// Attention. A packed qkv row holds nH query heads, then nKV key heads, then nKV value heads, hd floats each
// (W = (nH + 2 nKV) hd); query head h reads key/value head h / (nH / nKV).

/**
 * WGSL for online softmax by one workgroup of WG invocations, for a block of HPW query heads that share a KV head (the
 * whole group where its rows fit in workgroup memory, else one head), over the keys their query sees: keys j = 0 ..
 * `last` whose mask `mask[maskRow + j]` is 1, key j at `keys[keyAt(j)]`; the block's query rows are in workgroup
 * memory (`qRows`, head hh at hh HD), and `lastU` is `last` as a uniform value (loop bound around barriers). The keys
 * go by in tiles of WG: each invocation scores one key for every head of the block (the key row read once for all of
 * them), the heads' max and sum reductions run side by side (running max m, with the sum of exp(score - m) in `sum`
 * rescaled whenever m grows), and with `values` each invocation adds the tile's softmax-weighted value rows to the
 * dimensions it owns (`acc`, head hh's at hh DPT, unnormalised: divide by sum), each value row read once for all
 * heads. A query that sees no key leaves sum = 0 and m = NEG. The forward attention, its log-sum-exp and the KV-cache
 * attention all use it.
 */
function tiledSoftmax(
  o: {
    last: string;
    maskRow: string;
    keys: string;
    keyAt: (j: string) => string;
    values?: { buffer: string; at: (j: string) => string };
  },
  hpw: number,
  dpt: number,
): string {
  const v = o.values;
  const tree = (op: (a: string, b: string) => string) => `
      for (var stride = WG / 2; stride > 0; stride = stride / 2) {
        if (tid < stride) {
          for (var hh = 0; hh < HPW; hh = hh + 1) { gRed[hh * WG + tid] = ${op('gRed[hh * WG + tid]', 'gRed[hh * WG + tid + stride]')}; }
        }
        workgroupBarrier();
      }`;
  return `
    var m : array<f32, HPW>;
    var sum : array<f32, HPW>;
    var acc : array<f32, ${hpw * dpt}>;
    for (var hh = 0; hh < HPW; hh = hh + 1) { m[hh] = ${NEG}; sum[hh] = 0.0; }
    for (var j0 = 0; j0 <= lastU; j0 = j0 + WG) {
      let j = j0 + tid;
      var score : array<f32, HPW>;
      for (var hh = 0; hh < HPW; hh = hh + 1) { score[hh] = ${NEG}; }   // (each tile: not left to the compiler)
      if (j <= ${o.last} && f32(mask[${o.maskRow} + j]) != 0.0) {
        let k = ${o.keyAt('j')};
        var dot : array<f32, HPW>;
        for (var hh = 0; hh < HPW; hh = hh + 1) { dot[hh] = 0.0; }
        for (var d = 0; d < HD; d = d + 1) {
          let kd = ${o.keys}[k + d];
          for (var hh = 0; hh < HPW; hh = hh + 1) { dot[hh] = dot[hh] + qRows[hh * HD + d] * kd; }
        }
        for (var hh = 0; hh < HPW; hh = hh + 1) { score[hh] = dot[hh] * SCALE; }
      }
      for (var hh = 0; hh < HPW; hh = hh + 1) { gRed[hh * WG + tid] = score[hh]; }
      workgroupBarrier();${tree((a, b) => `max(${a}, ${b})`)}
      var mNew : array<f32, HPW>;
      for (var hh = 0; hh < HPW; hh = hh + 1) { mNew[hh] = max(m[hh], gRed[hh * WG]); }
      workgroupBarrier();
      for (var hh = 0; hh < HPW; hh = hh + 1) {
        let p = select(0.0, exp(score[hh] - mNew[hh]), score[hh] > ${NEG});
        gRed[hh * WG + tid] = p;
        gP[hh * WG + tid] = p;
      }
      workgroupBarrier();${tree((a, b) => `${a} + ${b}`)}
      var rescale : array<f32, HPW>;
      for (var hh = 0; hh < HPW; hh = hh + 1) {
        rescale[hh] = exp(m[hh] - mNew[hh]);
        sum[hh] = sum[hh] * rescale[hh] + gRed[hh * WG];
        m[hh] = mNew[hh];
      }
      workgroupBarrier();${
        v
          ? `
      let n = min(WG, lastU - j0 + 1);
      for (var e = 0; e < HPW * DPT; e = e + 1) { acc[e] = acc[e] * rescale[e / DPT]; }
      for (var t = 0; t < n; t = t + 1) {
        let vr = ${v.at('j0 + t')};
        for (var c = 0; c < DPT; c = c + 1) {
          let d = tid + c * WG;
          if (d < HD) {
            let vd = ${v.buffer}[vr + d];
            for (var hh = 0; hh < HPW; hh = hh + 1) {
              let pt = gP[hh * WG + t];
              if (pt != 0.0) { acc[hh * DPT + c] = acc[hh * DPT + c] + pt * vd; }
            }
          }
        }
      }
      workgroupBarrier();`
          : ''
      }
    }`;
}

/** WGSL: each head's softmax-weighted values (tiledSoftmax's acc, sum) written to its columns of `row`. */
function softmaxOutput(row: string): string {
  return `
    if (row < rows) {
      for (var hh = 0; hh < HPW; hh = hh + 1) {
        let norm = select(0.0, 1.0 / sum[hh], sum[hh] > 0.0);
        for (var c = 0; c < DPT; c = c + 1) {
          let d = tid + c * WG;
          if (d < HD) { result[${row} * NH * HD + (h0 + hh) * HD + d] = acc[hh * DPT + c] * norm; }
        }
      }
    }`;
}

/** The softmax programs' heads per workgroup (HPW) and workgroup memory: the block's query rows and a tile of scores
 *  and weights per head. */
function softmaxHeader(hpw: number, hd: number): string {
  return `
  const HPW = ${hpw};
  var<workgroup> qRows : array<f32, ${hpw * hd}>;
  var<workgroup> gRed : array<f32, ${hpw * WG}>;
  var<workgroup> gP : array<f32, ${hpw * WG}>;`;
}

/** Whether softmaxHeader for a whole group plus attentionHeader fit WebGPU's default 16 KiB of workgroup memory. */
export function softmaxGroupFits(group: number, hd: number): boolean {
  return 4 * (group * hd + 2 * group * WG + 2 * hd + 2 * WG + 1) <= 16384;
}

/**
 * Which attention programs run: 'auto' (the default) groups the query heads of a KV head in one workgroup where the
 * group fits (softmaxGroupFits, groupFits) for training and prefill, and keeps one workgroup per query head for decode
 * steps, whose few rows would leave most of a GPU idle with one workgroup per KV head (and whose speed was measured
 * per head); 'grouped' and 'per-head' force one kind everywhere, to measure one against the other in one sitting.
 * Node's RAGEN_WEBGPU_ATTENTION sets it when the kernels are registered.
 */
export type { AttentionGrouping };
const GROUPINGS = ATTENTION_GROUPINGS;
let grouping: AttentionGrouping = 'auto';

export function setWebGpuAttentionGrouping(next: AttentionGrouping): void {
  if (!GROUPINGS.includes(next))
    throw new Error(`webgpu attention grouping must be one of ${GROUPINGS.join(', ')}, got '${String(next)}'`);
  grouping = next;
}

/** Whether a program over `rowsPerSequence` query positions per sequence groups its heads. */
function grouped(fits: boolean, rowsPerSequence: number): boolean {
  if (!fits || grouping === 'per-head') return false;
  return grouping === 'grouped' || rowsPerSequence > 1;
}

/** WGSL shared by the tiled attention programs: workgroup memory (the dk/dv program's) and a value made uniform. */
function attentionHeader(hd: number): string {
  return `
  const WG = ${WG};
  const DPT = ${Math.ceil(hd / WG)};   // dimensions of a head per invocation
  var<workgroup> qRow : array<f32, HD>;
  var<workgroup> rowB : array<f32, HD>;
  var<workgroup> tileP : array<f32, ${WG}>;
  var<workgroup> tileS : array<f32, ${WG}>;
  var<workgroup> wgValue : i32;
  /** v shared by the workgroup, as a value the compiler knows is uniform (loop bounds around barriers). */
  fn uniformValue(tid : i32, v : i32) -> i32 {
    if (tid == 0) { wgValue = v; }
    return workgroupUniformLoad(&wgValue);
  }`;
}

/**
 * WGSL: the opening lines of a tiled attention program, one workgroup per (batch row b, position, head): `tid`; `B`
 * and `T` (mask [B, T], unless `T` is given); `rows`, the workgroups with work; `row`, this one, and `r`, it clamped
 * into range (no early return: barriers follow); then the head (`head`, of `per` per position), the packed row
 * b T + position (`packed`), `b` and the position (`pos`).
 */
function workgroupRow(o: { per: 'NH' | 'NKV'; head: string; packed: string; pos: string; T?: string }): string {
  return `
    let tid = i32(localId.x);
    let B = uniforms.maskShape[0];
    let T = ${o.T ?? 'uniforms.maskShape[1]'};
    let rows = B * T * ${o.per};
    let row = index / WG;
    let r = min(row, rows - 1);
    let ${o.head} = r % ${o.per};
    let ${o.packed} = r / ${o.per};
    let b = ${o.packed} / T;
    let ${o.pos} = ${o.packed} - b * T;`;
}

/** WGSL constants of a head layout (baked into the shader, so part of its key). */
function headConstants(a: HeadAttrs): { key: string; wgsl: string } {
  const { numHeads: nH, numKvHeads: nKV, headDim: hd } = a;
  return {
    key: `${nH}_${nKV}_${hd}`,
    wgsl: `
  const NH = ${nH};
  const NKV = ${nKV};
  const HD = ${hd};
  const GROUP = ${nH / nKV};
  const W = ${(nH + 2 * nKV) * hd};
  const SCALE = ${1 / Math.sqrt(hd)};`,
  };
}

function attention({ inputs: { qkv, mask }, backend, attrs }: Args): Info[] {
  const a = attrs as unknown as HeadAttrs;
  const { numHeads: nH, numKvHeads: nKV, headDim: hd } = a;
  const [B, T] = mask.shape;
  const hc = headConstants(a);
  // One workgroup per query (b, i) and block of HPW query heads (the KV group where it fits, see `grouped`; else one
  // head). It sees keys j <= i of its own batch row whose mask is 1.
  const hpw = grouped(softmaxGroupFits(nH / nKV, hd), T) ? nH / nKV : 1;
  const query = `${workgroupRow({ per: hpw === 1 ? 'NH' : 'NKV', head: 'hb', packed: 'bi', pos: 'i' })}
    let h0 = hb * HPW;   // the block's first query head
    let kOff = (NH + h0 / GROUP) * HD;
    let vOff = (NH + NKV + h0 / GROUP) * HD;
    for (var e = tid; e < HPW * HD; e = e + WG) { qRows[e] = qkv[bi * W + h0 * HD + e]; }
    let lastU = uniformValue(tid, i);   // (also the barrier after the row load)`;
  const keysSeen = { last: 'i', maskRow: 'b * T', keys: 'qkv', keyAt: (j: string) => `(b * T + ${j}) * W + kOff` };
  const head = `${hc.wgsl}${attentionHeader(hd)}${softmaxHeader(hpw, hd)}`;
  const dpt = Math.ceil(hd / WG),
    workgroups = B * T * (nH / hpw);
  // The log-sum-exp of each query's scaled scores over the keys it sees, or -infinity when it sees none.
  // Output [B, nH, T].
  const lseCode = `${head}
  fn main(index : i32) {${query}${tiledSoftmax(keysSeen, hpw, dpt)}
    if (row < rows && tid == 0) {
      for (var hh = 0; hh < HPW; hh = hh + 1) {
        result[(b * NH + h0 + hh) * T + i] = select(-uniforms.INFINITY, m[hh] + log(sum[hh]), sum[hh] > 0.0);
      }
    }
  }`;
  const lse = backend.runWebGPUProgram(
    perRow(`attn_lse${hpw}_${hc.key}`, ['qkv', 'mask'], [B, nH, T], workgroups, lseCode),
    [qkv, mask],
    'float32',
  );
  // The softmax-weighted sum of the values each query sees; zeros when it sees no key. Output [B T, nH hd].
  const outCode = `${head}
  fn main(index : i32) {${query}${tiledSoftmax({ ...keysSeen, values: { buffer: 'qkv', at: (j: string) => `(b * T + ${j}) * W + vOff` } }, hpw, dpt)}
${softmaxOutput('bi')}
  }`;
  const out = backend.runWebGPUProgram(
    perRow(`attn_out${hpw}_${hc.key}`, ['qkv', 'mask'], [B * T, nH * hd], workgroups, outCode),
    [qkv, mask],
    'float32',
  );
  return [out, lse];
}

/**
 * Whether the grouped dq program's workgroup memory (the group's query and dO rows, a tile of scores per head, and
 * attentionHeader's arrays) fits WebGPU's default 16 KiB: Qwen2.5-0.5B's group of 7 at head size 64 takes 6.3 KiB,
 * Qwen2.5-3B's 8 at 128 takes 11.0 KiB.
 */
export function groupFits(group: number, hd: number): boolean {
  return 4 * (2 * group * hd + group * WG + 2 * hd + 2 * WG + 1) <= 16384;
}

function attentionGrad({ inputs: { dOut, qkv, mask, out, lse }, backend, attrs }: Args): Info {
  const a = attrs as unknown as HeadAttrs;
  const { numHeads: nH, numKvHeads: nKV, headDim: hd } = a;
  const [B, T] = mask.shape;
  const hc = headConstants(a);
  // With p_ij = exp(scale q_i . k_j - lse_i) over the keys j query i sees and D_i = dO_i . O_i:
  //   dq_i = scale sum_j p_ij (dO_i . v_j - D_i) k_j,   dk_j = scale sum_i p_ij (dO_i . v_j - D_i) q_i,   dv_j = sum_i p_ij dO_i
  // (for a KV head, summed over the query heads of its group). Three programs: D per (row, head); then one workgroup
  // per (query, head) for dq and one per (key, KV head) for dk and dv, each walking the other side in tiles of WG:
  // the WG invocations first compute one score each (into workgroup memory), then each adds the tile's terms to
  // the dimensions it owns. So a row of work is spread over WG invocations instead of one, and every sum is still
  // taken in index order (deterministic, and the same order as cpu.ts). The loops run to a bound shared by the
  // workgroup (workgroupUniformLoad), as barriers require; dq's program writes the q columns of dqkv, then dk/dv's
  // program writes the k and v columns into the same tensor.
  const common = `${hc.wgsl}${attentionHeader(hd)}`;
  // D[b, h, i] = dO_i . O_i (one invocation per row and head).
  const dCode = `${hc.wgsl}
  fn main(index : i32) {
    if (index >= uniforms.B * uniforms.T * NH) { return; }
    let h = index % NH;
    let bi = index / NH;
    let b = bi / uniforms.T;
    let o = bi * NH * HD + h * HD;
    var D = 0.0;
    for (var d = 0; d < HD; d = d + 1) { D = D + dOut[o + d] * attnOut[o + d]; }
    result[(b * NH + h) * uniforms.T + bi - b * uniforms.T] = D;
  }`;
  const dInfo = backend.runWebGPUProgram(
    perItem(`attn_grad_d_${hc.key}`, ['dOut', 'attnOut'], [B, nH, T], B * T * nH, dCode, 'B : i32, T : i32,'),
    [dOut, out],
    'float32',
    [i32(B), i32(T)],
  );
  // dq: one workgroup per (b, i) and block of HPW query heads, tiles of keys j = j0 .. j0 + WG - 1 <= i. HPW is the
  // group (the heads sharing a KV head) where its rows fit in workgroup memory: each key and value row is then read
  // once for all of them instead of once per head (7 times for Qwen2.5-0.5B); else 1 (a workgroup per head). Per head
  // the sums are the same, in the same order.
  const hpw = grouped(groupFits(nH / nKV, hd), T) ? nH / nKV : 1;
  const dqCode = `${common}
  const HPW = ${hpw};
  var<workgroup> qRows : array<f32, ${hpw * hd}>;
  var<workgroup> oRows : array<f32, ${hpw * hd}>;
  var<workgroup> tileG : array<f32, ${hpw * WG}>;
  fn main(index : i32) {${workgroupRow({ per: hpw === 1 ? 'NH' : 'NKV', head: 'hb', packed: 'bi', pos: 'i' })}
    let h0 = hb * HPW;   // the block's first query head
    let kOff = (NH + h0 / GROUP) * HD;
    let vOff = (NH + NKV + h0 / GROUP) * HD;
    for (var e = tid; e < HPW * HD; e = e + WG) {
      qRows[e] = qkv[bi * W + h0 * HD + e];
      oRows[e] = dOut[bi * NH * HD + h0 * HD + e];
    }
    var l : array<f32, HPW>;
    var Di : array<f32, HPW>;
    for (var hh = 0; hh < HPW; hh = hh + 1) {
      l[hh] = lse[(b * NH + h0 + hh) * T + i];
      Di[hh] = Dt[(b * NH + h0 + hh) * T + i];
    }
    var acc : array<f32, ${hpw * Math.ceil(hd / WG)}>;
    let last = uniformValue(tid, i);   // (also the barrier after the row loads)
    for (var j0 = 0; j0 <= last; j0 = j0 + WG) {
      let j = j0 + tid;
      var score : array<f32, HPW>;
      var dp : array<f32, HPW>;
      for (var hh = 0; hh < HPW; hh = hh + 1) { score[hh] = 0.0; dp[hh] = 0.0; }   // (each tile: not left to the compiler)
      let seen = j <= i && f32(mask[b * T + min(j, T - 1)]) != 0.0;
      if (seen) {
        let k = (b * T + j) * W + kOff;
        let v = (b * T + j) * W + vOff;
        for (var d = 0; d < HD; d = d + 1) {
          let kd = qkv[k + d];
          let vd = qkv[v + d];
          for (var hh = 0; hh < HPW; hh = hh + 1) {
            score[hh] = score[hh] + qRows[hh * HD + d] * kd;
            dp[hh] = dp[hh] + oRows[hh * HD + d] * vd;
          }
        }
      }
      for (var hh = 0; hh < HPW; hh = hh + 1) {
        var ds = 0.0;
        if (seen && l[hh] > ${NEG}) { ds = exp(score[hh] * SCALE - l[hh]) * (dp[hh] - Di[hh]) * SCALE; }
        tileG[hh * WG + tid] = ds;
      }
      workgroupBarrier();
      let n = min(WG, last - j0 + 1);
      for (var t = 0; t < n; t = t + 1) {
        let k = (b * T + j0 + t) * W + kOff;
        for (var c = 0; c < DPT; c = c + 1) {
          let d = tid + c * WG;
          if (d < HD) {
            let kd = qkv[k + d];
            for (var hh = 0; hh < HPW; hh = hh + 1) { acc[hh * DPT + c] = acc[hh * DPT + c] + tileG[hh * WG + t] * kd; }
          }
        }
      }
      workgroupBarrier();
    }
    if (row < rows) {
      for (var hh = 0; hh < HPW; hh = hh + 1) {
        for (var c = 0; c < DPT; c = c + 1) {
          let d = tid + c * WG;
          if (d < HD) { result[bi * W + (h0 + hh) * HD + d] = acc[hh * DPT + c]; }
        }
      }
    }
  }`;
  const inputs = [dOut, qkv, mask, lse, dInfo];
  const names = ['dOut', 'qkv', 'mask', 'lse', 'Dt'];
  const dqkv = backend.runWebGPUProgram(
    perRow(`attn_grad_q${hpw}_${hc.key}`, names, qkv.shape, B * T * (nH / hpw), dqCode),
    inputs,
    'float32',
  );
  // dk, dv: workgroup (b, j, g); for each query head h of group g, tiles of queries i = i0 .. i0 + WG - 1 >= j.
  const dkvCode = `${common}
  fn main(index : i32) {${workgroupRow({ per: 'NKV', head: 'g', packed: 'bj', pos: 'j' })}
    let k = bj * W + (NH + g) * HD;
    let v = bj * W + (NH + NKV + g) * HD;
    for (var d = tid; d < HD; d = d + WG) { qRow[d] = qkv[k + d]; rowB[d] = qkv[v + d]; }   // (here: key and value)
    let live = f32(mask[bj]) != 0.0;
    var dk : array<f32, DPT>;
    var dv : array<f32, DPT>;
    let first = uniformValue(tid, j);
    for (var hh = 0; hh < GROUP; hh = hh + 1) {   // (not h from g GROUP to (g + 1) GROUP: g is not uniform)
      let h = g * GROUP + hh;
      for (var i0 = first; i0 < T; i0 = i0 + WG) {
        let i = i0 + tid;
        var p = 0.0;
        var ds = 0.0;
        if (live && i < T) {
          let q = (b * T + i) * W + h * HD;
          let o = (b * T + i) * NH * HD + h * HD;
          var score = 0.0;
          var dp = 0.0;
          for (var d = 0; d < HD; d = d + 1) {
            score = score + qkv[q + d] * qRow[d];
            dp = dp + dOut[o + d] * rowB[d];
          }
          p = exp(score * SCALE - lse[(b * NH + h) * T + i]);
          ds = p * (dp - Dt[(b * NH + h) * T + i]) * SCALE;
        }
        tileP[tid] = p;
        tileS[tid] = ds;
        workgroupBarrier();
        let n = min(WG, T - i0);
        for (var t = 0; t < n; t = t + 1) {
          let q = (b * T + i0 + t) * W + h * HD;
          let o = (b * T + i0 + t) * NH * HD + h * HD;
          for (var c = 0; c < DPT; c = c + 1) {
            let d = tid + c * WG;
            if (d < HD) {
              dk[c] = dk[c] + tileS[t] * qkv[q + d];
              dv[c] = dv[c] + tileP[t] * dOut[o + d];
            }
          }
        }
        workgroupBarrier();
      }
    }
    if (row < rows) {
      for (var c = 0; c < DPT; c = c + 1) {
        let d = tid + c * WG;
        if (d < HD) { result[k + d] = dk[c]; result[v + d] = dv[c]; }
      }
    }
  }`;
  backend.runWebGPUProgram(
    perRow(`attn_grad_kv_${hc.key}`, names, qkv.shape, B * T * nKV, dkvCode),
    inputs,
    'float32',
    undefined,
    dqkv,
  );
  disposeIntermediate(backend, dInfo);
  return dqkv;
}

function cachedAttention({ inputs: { qkv, cacheK, cacheV, mask }, backend, attrs }: Args): Info[] {
  const a = attrs as unknown as HeadAttrs & { slot: number };
  const { numHeads: nH, numKvHeads: nKV, headDim: hd, slot } = a;
  const [B] = mask.shape;
  const T = qkv.shape[0] / B,
    KW = nKV * hd;
  const hc = headConstants(a);
  // One invocation per (batch, new row t, float of a KV row): copies the new key (or value) of qkv row b T + t into
  // cache slot `slot + t`. The cache tensor is the program's output, so only those slots change.
  const writeCode = `${hc.wgsl}
  fn main(index : i32) {
    let KW = NKV * HD;
    let T = uniforms.qkvShape[0] / uniforms.outShape[0];
    if (index >= uniforms.qkvShape[0] * KW) { return; }
    let bt = index / KW;          // the packed qkv row b T + t
    let d = index - bt * KW;
    let b = bt / T;
    let t = bt - b * T;
    result[(b * uniforms.outShape[1] + uniforms.slot + t) * KW + d] = qkv[bt * W + uniforms.srcCol + d];
  }`;
  const write = (cache: Info, srcCol: number) =>
    backend.runWebGPUProgram(
      perItem(`cache_write_${hc.key}`, ['qkv'], cache.shape, B * T * KW, writeCode, 'slot : i32, srcCol : i32,'),
      [qkv],
      'float32',
      [i32(slot), i32(srcCol)],
      cache,
    );
  write(cacheK, nH * hd);
  write(cacheV, nH * hd + KW);
  // The backend keeps a CPU copy of a tensor it has read back, and would answer the next read from it: drop it, the
  // buffer has changed. (runWebGPUProgram uploaded any not-yet-uploaded values before writing, so nothing is lost.)
  backend.tensorMap.get(cacheK.dataId).values = null;
  backend.tensorMap.get(cacheV.dataId).values = null;
  // One workgroup per (batch, new row t) and block of HPW query heads (the KV group in a prefill where it fits, see
  // `grouped`; else one head, as in decode steps): online-softmax attention over the cache slots it sees (s <= slot +
  // t, mask 1), the new rows included (written just above); zeros when it sees none. A block reads each cached key and
  // value row once for all its heads.
  const hpw = grouped(softmaxGroupFits(nH / nKV, hd), T) ? nH / nKV : 1;
  const code = `${hc.wgsl}${attentionHeader(hd)}${softmaxHeader(hpw, hd)}
  fn main(index : i32) {${workgroupRow({ per: hpw === 1 ? 'NH' : 'NKV', head: 'hb', packed: 'bt', pos: 't', T: 'uniforms.qkvShape[0] / uniforms.maskShape[0]' })}
    let KW = NKV * HD;
    let C = uniforms.maskShape[1];
    let h0 = hb * HPW;   // the block's first query head
    let kv = (h0 / GROUP) * HD;
    for (var e = tid; e < HPW * HD; e = e + WG) { qRows[e] = qkv[bt * W + h0 * HD + e]; }
    let lastU = uniformValue(tid, uniforms.slot + t);${tiledSoftmax(
      {
        last: 'uniforms.slot + t',
        maskRow: 'b * C',
        keys: 'cacheK',
        keyAt: (j: string) => `(b * C + ${j}) * KW + kv`,
        values: { buffer: 'cacheV', at: (j: string) => `(b * C + ${j}) * KW + kv` },
      },
      hpw,
      Math.ceil(hd / WG),
    )}
${softmaxOutput('bt')}
  }`;
  const out = backend.runWebGPUProgram(
    perRow(
      `attn_cached${hpw}_${hc.key}`,
      ['qkv', 'cacheK', 'cacheV', 'mask'],
      [B * T, nH * hd],
      B * T * (nH / hpw),
      code,
      'slot : i32,',
    ),
    [qkv, cacheK, cacheV, mask],
    'float32',
    [i32(slot)],
  );
  backend.incRef(cacheK.dataId);
  backend.incRef(cacheV.dataId);
  return [out, { ...cacheK }, { ...cacheV }];
}

/**
 * Registers the fused kernels for the webgpu backend (idempotent). This module imports nothing from
 * tfjs-backend-webgpu (the backend arrives as the kernel's argument), so importing it is safe where WebGPU is absent.
 */
export function registerWebGpuKernels(): void {
  const env = attentionGroupingFromEnv();
  if (env) grouping = env;
  registerKernelTable('webgpu', {
    embed,
    embedGrad,
    sample,
    rmsNorm,
    rmsNormGrad,
    rope,
    swiGlu,
    swiGluGrad,
    attention,
    attentionGrad,
    cachedAttention,
    logProbs,
    logProbsGrad,
    ...webGpuAdamWKernels, // AdamW's per-variable layout: its gradient norm and the update in place
    ...webGpuMatmulKernels, // the tiled matmul (webgpuMatMulRoute.ts routes the model's matmuls to it on a GPU)
  });
}
