// The fused kernels on tfjs's cpu backend: plain JavaScript over the tensors' arrays. This is the reference the
// wasm (C) and webgpu (WGSL) kernels are read against: the same loops, in the order of wasm/kernels.c, without SIMD.
// JavaScript computes in double precision and rounds when storing into the Float32Array outputs.
import * as tf from '@tensorflow/tfjs';
import { registerKernelTable, type AdamWAttrs, type HeadAttrs } from './ops';

type Info = { dataId: object; shape: number[]; dtype: tf.DataType };
interface CpuBackend {
  data: { get(id: object): { values: ArrayLike<number> } };
  makeTensorInfo(shape: number[], dtype: tf.DataType, values?: Float32Array): Info;
  incRef(id: object): void;
}
type Args = { inputs: Record<string, Info>; backend: CpuBackend; attrs: Record<string, unknown> };

const vals = (b: CpuBackend, t: Info) => b.data.get(t.dataId).values as Float32Array;

function rmsNorm({ inputs: { x, weight }, backend, attrs }: Args): Info {
  const [rows, H] = x.shape;
  const X = vals(backend, x),
    w = vals(backend, weight),
    y = new Float32Array(rows * H);
  const eps = attrs.eps as number;
  for (let r = 0; r < rows; r++) {
    let ss = 0;
    for (let i = 0; i < H; i++) ss += X[r * H + i] ** 2;
    const inv = 1 / Math.sqrt(ss / H + eps);
    for (let i = 0; i < H; i++) y[r * H + i] = X[r * H + i] * inv * w[i];
  }
  return backend.makeTensorInfo(x.shape, 'float32', y);
}

function rmsNormGrad({ inputs: { dy, x, weight }, backend, attrs }: Args): Info[] {
  const [rows, H] = x.shape;
  const X = vals(backend, x),
    D = vals(backend, dy),
    w = vals(backend, weight);
  const dx = new Float32Array(rows * H),
    dw = new Float64Array(H);
  const eps = attrs.eps as number;
  for (let r = 0; r < rows; r++) {
    let ss = 0,
      g = 0;
    for (let i = 0; i < H; i++) {
      const xi = X[r * H + i];
      ss += xi * xi;
      g += w[i] * D[r * H + i] * xi;
    }
    const inv = 1 / Math.sqrt(ss / H + eps);
    const c = (g * inv ** 3) / H;
    for (let i = 0; i < H; i++) {
      dx[r * H + i] = inv * w[i] * D[r * H + i] - c * X[r * H + i];
      dw[i] += D[r * H + i] * X[r * H + i] * inv;
    }
  }
  return [
    backend.makeTensorInfo(x.shape, 'float32', dx),
    backend.makeTensorInfo([H], 'float32', Float32Array.from(dw)),
  ];
}

function rope({ inputs: { x, positions, cos, sin }, backend, attrs }: Args): Info {
  const [rows, W] = x.shape;
  const { rotatedHeads, headDim: hd, inverse } = attrs as { rotatedHeads: number; headDim: number; inverse: boolean };
  const X = vals(backend, x),
    P = backend.data.get(positions.dataId).values,
    C = vals(backend, cos),
    S = vals(backend, sin);
  const y = new Float32Array(rows * W),
    half = hd / 2,
    sign = inverse ? -1 : 1;
  for (let r = 0; r < rows; r++) {
    const p = P[r] * hd;
    for (let h = 0; h < rotatedHeads; h++) {
      const o = r * W + h * hd;
      for (let i = 0; i < half; i++) {
        const a = X[o + i],
          b = X[o + half + i],
          c = C[p + i],
          s = sign * S[p + i];
        y[o + i] = a * c - b * s;
        y[o + half + i] = b * c + a * s;
      }
    }
    for (let i = rotatedHeads * hd; i < W; i++) y[r * W + i] = X[r * W + i];
  }
  return backend.makeTensorInfo(x.shape, 'float32', y);
}

const sigmoid = (g: number) => 1 / (1 + Math.exp(-g));

function swiGlu({ inputs: { gu }, backend }: Args): Info {
  const [rows, I2] = gu.shape,
    I = I2 / 2;
  const G = vals(backend, gu),
    y = new Float32Array(rows * I);
  for (let r = 0; r < rows; r++) {
    for (let i = 0; i < I; i++) {
      const g = G[r * I2 + i];
      y[r * I + i] = g * sigmoid(g) * G[r * I2 + I + i];
    }
  }
  return backend.makeTensorInfo([rows, I], 'float32', y);
}

function swiGluGrad({ inputs: { dy, gu }, backend }: Args): Info {
  const [rows, I2] = gu.shape,
    I = I2 / 2;
  const G = vals(backend, gu),
    D = vals(backend, dy),
    out = new Float32Array(rows * I2);
  for (let r = 0; r < rows; r++) {
    for (let i = 0; i < I; i++) {
      const g = G[r * I2 + i],
        u = G[r * I2 + I + i],
        d = D[r * I + i],
        s = sigmoid(g);
      out[r * I2 + i] = d * u * s * (1 + g * (1 - s));
      out[r * I2 + I + i] = d * g * s;
    }
  }
  return backend.makeTensorInfo(gu.shape, 'float32', out);
}

/** log-sum-exp and sum(p * z) of one row of logits z/T. */
function rowStats(Z: Float32Array, o: number, V: number, invT: number): { lse: number; pz: number } {
  let m = -Infinity;
  for (let i = 0; i < V; i++) m = Math.max(m, Z[o + i] * invT);
  let s = 0;
  for (let i = 0; i < V; i++) s += Math.exp(Z[o + i] * invT - m);
  const lse = m + Math.log(s);
  let pz = 0;
  for (let i = 0; i < V; i++) {
    const z = Z[o + i] * invT;
    pz += Math.exp(z - lse) * z;
  }
  return { lse, pz };
}

function logProbs({ inputs: { logits, targets }, backend, attrs }: Args): Info[] {
  const [rows, V] = logits.shape;
  const Z = vals(backend, logits),
    tgt = backend.data.get(targets.dataId).values,
    invT = 1 / (attrs.temperature as number);
  const lp = new Float32Array(rows),
    ent = new Float32Array(rows);
  for (let r = 0; r < rows; r++) {
    const { lse, pz } = rowStats(Z, r * V, V, invT);
    ent[r] = lse - pz;
    lp[r] = tgt[r] >= 0 ? Z[r * V + tgt[r]] * invT - lse : 0;
  }
  return [backend.makeTensorInfo([rows], 'float32', lp), backend.makeTensorInfo([rows], 'float32', ent)];
}

function logProbsGrad({ inputs: { dLogProbs, dEntropy, logits, targets }, backend, attrs }: Args): Info {
  const [rows, V] = logits.shape;
  const Z = vals(backend, logits),
    tgt = backend.data.get(targets.dataId).values,
    invT = 1 / (attrs.temperature as number);
  const g = vals(backend, dLogProbs),
    ge = vals(backend, dEntropy),
    dz = new Float32Array(rows * V);
  for (let r = 0; r < rows; r++) {
    const { lse, pz } = rowStats(Z, r * V, V, invT);
    const H = lse - pz;
    const gr = tgt[r] >= 0 ? g[r] : 0; // without a target, lp is the constant 0
    for (let i = 0; i < V; i++) {
      const logp = Z[r * V + i] * invT - lse;
      dz[r * V + i] = invT * -(Math.exp(logp) * (gr + ge[r] * (logp + H)));
    }
    if (tgt[r] >= 0) dz[r * V + tgt[r]] += invT * gr;
  }
  return backend.makeTensorInfo(logits.shape, 'float32', dz);
}

const dot = (a: Float32Array, ao: number, b: Float32Array, bo: number, n: number) => {
  let s = 0;
  for (let d = 0; d < n; d++) s += a[ao + d] * b[bo + d];
  return s;
};

function attention({ inputs: { qkv, mask }, backend, attrs }: Args): Info[] {
  const { numHeads: nH, numKvHeads: nKV, headDim: hd } = attrs as unknown as HeadAttrs;
  const [B, T] = mask.shape;
  const W = (nH + 2 * nKV) * hd,
    group = nH / nKV,
    scale = 1 / Math.sqrt(hd);
  const X = vals(backend, qkv),
    M = vals(backend, mask);
  const out = new Float32Array(B * T * nH * hd),
    lse = new Float32Array(B * nH * T),
    scores = new Float64Array(T);
  for (let b = 0; b < B; b++) {
    for (let h = 0; h < nH; h++) {
      const kOff = (nH + Math.floor(h / group)) * hd,
        vOff = (nH + nKV + Math.floor(h / group)) * hd;
      for (let i = 0; i < T; i++) {
        const q = (b * T + i) * W + h * hd,
          o = (b * T + i) * nH * hd + h * hd;
        let mx = -Infinity;
        for (let j = 0; j <= i; j++) {
          if (!M[b * T + j]) continue;
          scores[j] = dot(X, q, X, (b * T + j) * W + kOff, hd) * scale;
          mx = Math.max(mx, scores[j]);
        }
        if (mx === -Infinity) {
          lse[(b * nH + h) * T + i] = -Infinity;
          continue;
        }
        let sum = 0;
        const acc = new Float64Array(hd);
        for (let j = 0; j <= i; j++) {
          if (!M[b * T + j]) continue;
          const p = Math.exp(scores[j] - mx);
          sum += p;
          for (let d = 0; d < hd; d++) acc[d] += p * X[(b * T + j) * W + vOff + d];
        }
        for (let d = 0; d < hd; d++) out[o + d] = acc[d] / sum;
        lse[(b * nH + h) * T + i] = mx + Math.log(sum);
      }
    }
  }
  return [backend.makeTensorInfo([B * T, nH * hd], 'float32', out), backend.makeTensorInfo([B, nH, T], 'float32', lse)];
}

function attentionGrad({ inputs: { dOut, qkv, mask, out, lse }, backend, attrs }: Args): Info {
  const { numHeads: nH, numKvHeads: nKV, headDim: hd } = attrs as unknown as HeadAttrs;
  const [B, T] = mask.shape;
  const W = (nH + 2 * nKV) * hd,
    group = nH / nKV,
    scale = 1 / Math.sqrt(hd);
  const X = vals(backend, qkv),
    M = vals(backend, mask),
    dO = vals(backend, dOut),
    O = vals(backend, out),
    L = vals(backend, lse);
  const dX = new Float64Array(B * T * W);
  for (let b = 0; b < B; b++) {
    for (let h = 0; h < nH; h++) {
      const kOff = (nH + Math.floor(h / group)) * hd,
        vOff = (nH + nKV + Math.floor(h / group)) * hd;
      for (let i = 0; i < T; i++) {
        const l = L[(b * nH + h) * T + i];
        if (l === -Infinity) continue;
        const q = (b * T + i) * W + h * hd,
          o = (b * T + i) * nH * hd + h * hd;
        const D = dot(dO, o, O, o, hd);
        for (let j = 0; j <= i; j++) {
          if (!M[b * T + j]) continue;
          const k = (b * T + j) * W + kOff,
            v = (b * T + j) * W + vOff;
          const p = Math.exp(dot(X, q, X, k, hd) * scale - l);
          const ds = p * (dot(dO, o, X, v, hd) - D) * scale;
          for (let d = 0; d < hd; d++) {
            dX[q + d] += ds * X[k + d];
            dX[k + d] += ds * X[q + d];
            dX[v + d] += p * dO[o + d];
          }
        }
      }
    }
  }
  return backend.makeTensorInfo(qkv.shape, 'float32', Float32Array.from(dX));
}

/** Writes the new keys/values into the caches IN PLACE and returns them as outputs sharing their data (see wasm.ts). */
function cachedAttention({ inputs: { qkv, cacheK, cacheV, mask }, backend, attrs }: Args): Info[] {
  const { numHeads: nH, numKvHeads: nKV, headDim: hd, slot } = attrs as unknown as HeadAttrs & { slot: number };
  const [B, C] = mask.shape;
  const T = qkv.shape[0] / B,
    W = (nH + 2 * nKV) * hd,
    KW = nKV * hd,
    group = nH / nKV,
    scale = 1 / Math.sqrt(hd);
  const X = vals(backend, qkv),
    M = vals(backend, mask),
    CK = vals(backend, cacheK),
    CV = vals(backend, cacheV);
  for (let b = 0; b < B; b++) {
    for (let t = 0; t < T; t++) {
      for (let d = 0; d < KW; d++) {
        CK[(b * C + slot + t) * KW + d] = X[(b * T + t) * W + nH * hd + d];
        CV[(b * C + slot + t) * KW + d] = X[(b * T + t) * W + nH * hd + KW + d];
      }
    }
  }
  const out = new Float32Array(B * T * nH * hd),
    scores = new Float64Array(C);
  for (let b = 0; b < B; b++) {
    for (let h = 0; h < nH; h++) {
      const kv = Math.floor(h / group) * hd;
      for (let t = 0; t < T; t++) {
        const q = (b * T + t) * W + h * hd,
          o = (b * T + t) * nH * hd + h * hd;
        let mx = -Infinity;
        for (let j = 0; j <= slot + t; j++) {
          if (!M[b * C + j]) continue;
          scores[j] = dot(X, q, CK, (b * C + j) * KW + kv, hd) * scale;
          mx = Math.max(mx, scores[j]);
        }
        if (mx === -Infinity) continue;
        let sum = 0;
        const acc = new Float64Array(hd);
        for (let j = 0; j <= slot + t; j++) {
          if (!M[b * C + j]) continue;
          const p = Math.exp(scores[j] - mx);
          sum += p;
          for (let d = 0; d < hd; d++) acc[d] += p * CV[(b * C + j) * KW + kv + d];
        }
        for (let d = 0; d < hd; d++) out[o + d] = acc[d] / sum;
      }
    }
  }
  backend.incRef(cacheK.dataId);
  backend.incRef(cacheV.dataId);
  return [backend.makeTensorInfo([B * T, nH * hd], 'float32', out), { ...cacheK }, { ...cacheV }];
}

function embed({ inputs: { table, ids }, backend }: Args): Info {
  const [, H] = table.shape;
  const E = vals(backend, table),
    I = backend.data.get(ids.dataId).values,
    out = new Float32Array(I.length * H);
  for (let i = 0; i < I.length; i++) out.set(E.subarray(I[i] * H, I[i] * H + H), i * H);
  return backend.makeTensorInfo([I.length, H], 'float32', out);
}

function embedGrad({ inputs: { dy, ids }, backend, attrs }: Args): Info {
  const H = dy.shape[1],
    V = attrs.vocabSize as number;
  const D = vals(backend, dy),
    I = backend.data.get(ids.dataId).values,
    out = new Float32Array(V * H);
  for (let i = 0; i < I.length; i++) for (let d = 0; d < H; d++) out[I[i] * H + d] += D[i * H + d];
  return backend.makeTensorInfo([V, H], 'float32', out);
}

function sample({ inputs: { logits, uniforms }, backend, attrs }: Args): Info {
  const [rows, V] = logits.shape;
  const Z = vals(backend, logits),
    U = vals(backend, uniforms),
    invT = 1 / (attrs.temperature as number);
  const out = new Int32Array(rows);
  for (let r = 0; r < rows; r++) {
    let m = -Infinity;
    for (let i = 0; i < V; i++) m = Math.max(m, Z[r * V + i] * invT);
    let total = 0;
    for (let i = 0; i < V; i++) total += Math.exp(Z[r * V + i] * invT - m);
    let cum = 0,
      pick = V - 1;
    for (let i = 0; i < V; i++) {
      cum += Math.exp(Z[r * V + i] * invT - m);
      if (cum >= U[r] * total) {
        pick = i;
        break;
      }
    }
    out[r] = pick;
  }
  return backend.makeTensorInfo([rows], 'int32', out as unknown as Float32Array);
}

function sumSquares({ inputs, backend, attrs }: Args): Info {
  let total = 0;
  const seg = attrs.segments as number[] | undefined;
  if (seg) {
    for (let s = 0; s < seg.length; s += 3) {
      const x = vals(backend, inputs[`t${seg[s]}`]);
      for (let i = seg[s + 1], end = seg[s + 1] + seg[s + 2]; i < end; i++) total += x[i] * x[i];
    }
  } else {
    for (let t = 0; t < (attrs.n as number); t++) for (const x of vals(backend, inputs[`t${t}`])) total += x * x;
  }
  return backend.makeTensorInfo([], 'float32', Float32Array.of(total));
}

/** AdamW in place (see ops.ts AdamWAttrs), after checking every new value is finite; returns 1 applied / 0 not. */
function adamW({ inputs, backend, attrs }: Args): Info {
  const a = attrs as unknown as AdamWAttrs & { n: number };
  const f = Math.fround;
  const M = vals(backend, inputs.m),
    V = vals(backend, inputs.v);
  for (const write of [false, true]) {
    let off = 0;
    for (let t = 0; t < a.n; t++) {
      const P = vals(backend, inputs[`p${t}`]),
        G = vals(backend, inputs[`g${t}`]);
      for (let i = 0; i < P.length; i++, off++) {
        // Rounded to float32 after every operation, as the float32 kernels do.
        const g = f(G[i] * a.coef);
        const m = f(f(M[off] * a.b1) + f(g * a.omb1));
        const v = f(f(V[off] * a.b2) + f(f(g * g) * a.omb2));
        const den = f(f(f(Math.sqrt(v)) / a.bc2) + a.eps);
        const p = f(f(P[i] * a.decay) - f(f(m / den) * a.stepSize));
        if (!write) {
          if (!Number.isFinite(p) || !Number.isFinite(m) || !Number.isFinite(v))
            return backend.makeTensorInfo([1], 'int32', Int32Array.of(0) as unknown as Float32Array);
        } else {
          P[i] = p;
          M[off] = m;
          V[off] = v;
        }
      }
    }
  }
  return backend.makeTensorInfo([1], 'int32', Int32Array.of(1) as unknown as Float32Array);
}

/** Registers the fused kernels for the cpu backend (idempotent). */
export function registerCpuKernels(): void {
  registerKernelTable('cpu', {
    sumSquares,
    adamW,
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
  });
}
