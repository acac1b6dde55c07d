// Fused kernels of the Qwen2 policy for tfjs's wasm backend, in C with WebAssembly SIMD (128-bit).
//
// Why C: tfjs-backend-wasm runs a batched matmul (attention: [B*heads, T, hd] x [B*heads, hd, T]) on a scalar loop
// at 1-2 GFLOP/s, and every small op costs ~30 us of engine overhead. These kernels do a whole operation (RMSNorm,
// RoPE, SwiGLU, causal attention, log-softmax + gather + entropy) in one call, with SIMD over the head dimension.
// The linear layers' matmuls (matmul, at the end) are ours too where they beat tfjs-wasm's (src/model/wasmMatMul.ts).
// scripts/build-kernels.sh builds this file twice: for SIMD128, and for SIMD128 with relaxed SIMD, whose fused
// multiply-add the matrix products' inner loops then use (madd); src/model/kernels/wasm.ts picks the build.
//
// How it runs: the module is instantiated with tfjs's own WebAssembly.Memory as its memory (`--import-memory`), so a
// kernel reads and writes tensors where tfjs keeps them; every pointer below is a byte offset into that heap that
// src/model/kernels/wasm.ts takes from tfjs. The module must therefore own no memory of its own: no global or static
// data, no string literals, no arrays on the stack (the linker would place a stack and data segments at fixed
// addresses inside tfjs's heap). scripts/build-kernels.sh checks the compiled module has no data section and never
// touches the stack pointer. Scratch space is passed in by the caller as tensors it allocated.
//
// Layouts (row-major, float32 unless said otherwise):
//   qkv   [rows, (nH + 2 nKV) * hd]  one token's query heads, then key heads, then value heads (a packed projection)
//   out   [rows, nH * hd]
//   mask  [B, S] 1 = a real key, 0 = padding (or an unwritten cache slot)
//   lse   [B, nH, T] log-sum-exp of each query's scaled scores (-inf when it sees no key), kept for the backward pass
// Causal rule: query i of a sequence sits at key slot `slot + i` and sees keys s <= slot + i with mask[s] = 1.
// A query that sees no key at all (left padding) outputs zeros and gets no gradient.
#include <wasm_simd128.h>

typedef float f32;
typedef v128_t v4;

#define EXPORT(name) __attribute__((export_name(#name)))
#define NEG_INF (-__builtin_inff())

static inline v4 splat(f32 x) { return wasm_f32x4_splat(x); }
static inline v4 load(const f32* p) { return wasm_v128_load(p); }
static inline void store(f32* p, v4 v) { wasm_v128_store(p, v); }
static inline v4 add(v4 a, v4 b) { return wasm_f32x4_add(a, b); }
static inline v4 sub(v4 a, v4 b) { return wasm_f32x4_sub(a, b); }
static inline v4 mul(v4 a, v4 b) { return wasm_f32x4_mul(a, b); }
// c + a b. Built with relaxed SIMD (scripts/build-kernels.sh's second module), a fused multiply-add where the CPU has
// one (x86's FMA3, ARM's fmla: one instruction and one rounding instead of two); otherwise a multiply, then an add.
// The matrix products' inner loops (matmul, attention) use it; the other kernels round as before.
static inline v4 madd(v4 a, v4 b, v4 c) {
#ifdef __wasm_relaxed_simd__
  return (v4)__builtin_wasm_relaxed_madd_f32x4((__f32x4)a, (__f32x4)b, (__f32x4)c);
#else
  return wasm_f32x4_add(c, wasm_f32x4_mul(a, b));
#endif
}
static inline f32 hmax(v4 v) {
  v4 m = wasm_f32x4_max(v, wasm_i32x4_shuffle(v, v, 2, 3, 0, 1));
  return wasm_f32x4_extract_lane(wasm_f32x4_max(m, wasm_i32x4_shuffle(m, m, 1, 0, 3, 2)), 0);
}
static inline f32 hsum(v4 v) {
  return (wasm_f32x4_extract_lane(v, 0) + wasm_f32x4_extract_lane(v, 1)) +
         (wasm_f32x4_extract_lane(v, 2) + wasm_f32x4_extract_lane(v, 3));
}

// exp(x) for 4 lanes: Cephes' expf (range reduction by ln 2, degree-6 polynomial), about 1 ulp. Inputs are clamped
// to [-87, 88]: exp(-87) ~ 1.6e-38 is still a normal float, so 2^n never underflows the exponent field.
static inline v4 v_exp(v4 x) {
  x = wasm_f32x4_min(wasm_f32x4_max(x, splat(-87.0f)), splat(88.0f));
  v4 n = wasm_f32x4_nearest(mul(x, splat(1.44269504088896341f)));
  x = sub(x, mul(n, splat(0.693359375f)));
  x = sub(x, mul(n, splat(-2.12194440e-4f)));
  v4 y = splat(1.9875691500e-4f);
  y = add(mul(y, x), splat(1.3981999507e-3f));
  y = add(mul(y, x), splat(8.3334519073e-3f));
  y = add(mul(y, x), splat(4.1665795894e-2f));
  y = add(mul(y, x), splat(1.6666665459e-1f));
  y = add(mul(y, x), splat(5.0000001201e-1f));
  y = add(add(mul(mul(y, x), x), x), splat(1.0f));
  v4 scale = wasm_i32x4_shl(wasm_i32x4_add(wasm_i32x4_trunc_sat_f32x4(n), wasm_i32x4_splat(127)), 23);
  return mul(y, scale);
}

static inline f32 s_exp(f32 x) { return wasm_f32x4_extract_lane(v_exp(splat(x)), 0); }

// log(x) for a normal positive float: Cephes' logf, about 1 ulp. Used on sums of exponentials (>= 1).
static f32 s_log(f32 x) {
  union { f32 f; int i; } u = { x };
  int e = ((u.i >> 23) & 0xff) - 126;
  u.i = (u.i & 0x807fffff) | 0x3f000000;   // mantissa in [0.5, 1)
  f32 m = u.f;
  if (m < 0.707106781186547524f) { e -= 1; m = m + m - 1.0f; } else { m = m - 1.0f; }
  f32 z = m * m;
  f32 y = 7.0376836292e-2f;
  y = y * m - 1.1514610310e-1f;
  y = y * m + 1.1676998740e-1f;
  y = y * m - 1.2420140846e-1f;
  y = y * m + 1.4249322787e-1f;
  y = y * m - 1.6668057665e-1f;
  y = y * m + 2.0000714765e-1f;
  y = y * m - 2.4999993993e-1f;
  y = y * m + 3.3333331174e-1f;
  y = y * m * z;
  f32 fe = (f32)e;
  y += -2.12194440e-4f * fe;
  y += -0.5f * z;
  return m + y + 0.693359375f * fe;
}

static inline f32 dot(const f32* a, const f32* b, int n) {   // n % 4 == 0
  v4 acc = splat(0);
  for (int i = 0; i < n; i += 4) acc = add(acc, mul(load(a + i), load(b + i)));
  return hsum(acc);
}

static inline void axpy(f32* y, f32 a, const f32* x, int n) {   // y += a x, n % 4 == 0
  v4 va = splat(a);
  for (int i = 0; i < n; i += 4) store(y + i, add(load(y + i), mul(va, load(x + i))));
}

// The key loops of generation's attention serve one or two query rows at once (two heads that share a key/value
// head, NQ below): each key and value is loaded once for both. NQ is a constant at every call, so the loops over the
// rows unroll and their arrays live in registers (the module may use no stack). Each row's arithmetic is the same
// whether it goes alone or in a pair.
#define INLINE static inline __attribute__((always_inline))
#define NQ_MAX 2

// Four dot products per row: lane j of out[r] = a[r] . b_j (n % 4 == 0). Four accumulators a row, then a 4x4
// transpose-and-add.
INLINE void dot4(int nq, const f32* const* a, const f32* b0, const f32* b1, const f32* b2, const f32* b3, int n,
                 v4* out) {
  v4 s[NQ_MAX][4];
  for (int r = 0; r < nq; r++) s[r][0] = s[r][1] = s[r][2] = s[r][3] = splat(0);
  for (int i = 0; i < n; i += 4) {
    v4 k0 = load(b0 + i), k1 = load(b1 + i), k2 = load(b2 + i), k3 = load(b3 + i);
    for (int r = 0; r < nq; r++) {
      v4 va = load(a[r] + i);
      s[r][0] = add(s[r][0], mul(va, k0));
      s[r][1] = add(s[r][1], mul(va, k1));
      s[r][2] = add(s[r][2], mul(va, k2));
      s[r][3] = add(s[r][3], mul(va, k3));
    }
  }
  for (int r = 0; r < nq; r++) {
    v4 t0 = wasm_i32x4_shuffle(s[r][0], s[r][1], 0, 4, 1, 5), t1 = wasm_i32x4_shuffle(s[r][0], s[r][1], 2, 6, 3, 7);
    v4 t2 = wasm_i32x4_shuffle(s[r][2], s[r][3], 0, 4, 1, 5), t3 = wasm_i32x4_shuffle(s[r][2], s[r][3], 2, 6, 3, 7);
    v4 u0 = add(t0, t1), u1 = add(t2, t3);   // u0 = (s0a, s1a, s0b, s1b), u1 likewise for s2, s3
    out[r] = add(wasm_i32x4_shuffle(u0, u1, 0, 1, 4, 5), wasm_i32x4_shuffle(u0, u1, 2, 3, 6, 7));
  }
}

// Per row: y[r] += p0 x0 + p1 x1 + p2 x2 + p3 x3, the weights being the lanes of p[r] (n % 4 == 0).
INLINE void axpy4(int nq, f32* const* y, const v4* p, const f32* x0, const f32* x1, const f32* x2, const f32* x3,
                  int n) {
  v4 w[NQ_MAX][4];
  for (int r = 0; r < nq; r++) {
    w[r][0] = wasm_i32x4_shuffle(p[r], p[r], 0, 0, 0, 0);
    w[r][1] = wasm_i32x4_shuffle(p[r], p[r], 1, 1, 1, 1);
    w[r][2] = wasm_i32x4_shuffle(p[r], p[r], 2, 2, 2, 2);
    w[r][3] = wasm_i32x4_shuffle(p[r], p[r], 3, 3, 3, 3);
  }
  for (int i = 0; i < n; i += 4) {
    v4 v0 = load(x0 + i), v1 = load(x1 + i), v2 = load(x2 + i), v3 = load(x3 + i);
    for (int r = 0; r < nq; r++) {
      v4 acc = add(add(mul(w[r][0], v0), mul(w[r][1], v1)), add(mul(w[r][2], v2), mul(w[r][3], v3)));
      store(y[r] + i, add(load(y[r] + i), acc));
    }
  }
}

static void zero(f32* p, int n) {
  int i = 0;
  for (; i + 4 <= n; i += 4) store(p + i, splat(0));
  for (; i < n; i++) p[i] = 0;
}

// ---------------------------------------------------------------------------------------------------------------
// RMSNorm over the last axis: y = x / sqrt(mean(x^2) + eps) * w.  x, y [rows, H].

EXPORT(rmsnorm_fwd)
void rmsnorm_fwd(const f32* x, const f32* w, f32* y, int rows, int H, f32 eps) {
  for (int r = 0; r < rows; r++) {
    const f32* xr = x + (long)r * H;
    f32* yr = y + (long)r * H;
    v4 acc = splat(0);
    int i = 0;
    for (; i + 4 <= H; i += 4) { v4 v = load(xr + i); acc = add(acc, mul(v, v)); }
    f32 ss = hsum(acc);
    for (; i < H; i++) ss += xr[i] * xr[i];
    f32 inv = 1.0f / __builtin_sqrtf(ss / (f32)H + eps);
    v4 vinv = splat(inv);
    for (i = 0; i + 4 <= H; i += 4) store(yr + i, mul(mul(load(xr + i), vinv), load(w + i)));
    for (; i < H; i++) yr[i] = xr[i] * inv * w[i];
  }
}

// dx = inv * (w dy) - x * inv^3 / H * sum(w dy x);  dw = sum over rows of dy * x * inv.
EXPORT(rmsnorm_bwd)
void rmsnorm_bwd(const f32* dy, const f32* x, const f32* w, f32* dx, f32* dw, int rows, int H, f32 eps) {
  zero(dw, H);
  for (int r = 0; r < rows; r++) {
    const f32* xr = x + (long)r * H;
    const f32* dyr = dy + (long)r * H;
    f32* dxr = dx + (long)r * H;
    f32 ss = 0, g = 0;
    for (int i = 0; i < H; i++) { ss += xr[i] * xr[i]; g += w[i] * dyr[i] * xr[i]; }
    f32 inv = 1.0f / __builtin_sqrtf(ss / (f32)H + eps);
    f32 c = g * inv * inv * inv / (f32)H;
    for (int i = 0; i < H; i++) {
      dxr[i] = inv * w[i] * dyr[i] - c * xr[i];
      dw[i] += dyr[i] * xr[i] * inv;
    }
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Rotary embeddings on the first nRot heads of each row (the query and key heads of a packed qkv row); the rest of
// the row (value heads) is copied. x, y [rows, W]; pos [rows] int32; cosT, sinT [maxPos, hd] (both halves equal).
// Forward: (a, b) -> (a c - b s, b c + a s). inverse = 1 applies the transposed rotation (the gradient):
// (a, b) -> (a c + b s, b c - a s).

EXPORT(rope)
void rope(const f32* x, const int* pos, const f32* cosT, const f32* sinT, f32* y, int rows, int W, int nRot, int hd,
          int inverse) {
  int half = hd / 2;
  for (int r = 0; r < rows; r++) {
    const f32* c = cosT + (long)pos[r] * hd;
    const f32* s = sinT + (long)pos[r] * hd;
    const f32* xr = x + (long)r * W;
    f32* yr = y + (long)r * W;
    for (int h = 0; h < nRot; h++) {
      const f32* a = xr + h * hd;
      f32* o = yr + h * hd;
      int i = 0;
      if (!inverse) {
        for (; i + 4 <= half; i += 4) {
          v4 va = load(a + i), vb = load(a + half + i), vc = load(c + i), vs = load(s + i);
          store(o + i, sub(mul(va, vc), mul(vb, vs)));
          store(o + half + i, add(mul(vb, vc), mul(va, vs)));
        }
        for (; i < half; i++) { o[i] = a[i] * c[i] - a[half + i] * s[i]; o[half + i] = a[half + i] * c[i] + a[i] * s[i]; }
      } else {
        for (; i + 4 <= half; i += 4) {
          v4 va = load(a + i), vb = load(a + half + i), vc = load(c + i), vs = load(s + i);
          store(o + i, add(mul(va, vc), mul(vb, vs)));
          store(o + half + i, sub(mul(vb, vc), mul(va, vs)));
        }
        for (; i < half; i++) { o[i] = a[i] * c[i] + a[half + i] * s[i]; o[half + i] = a[half + i] * c[i] - a[i] * s[i]; }
      }
    }
    for (int i = nRot * hd; i < W; i++) yr[i] = xr[i];
  }
}

// ---------------------------------------------------------------------------------------------------------------
// SwiGLU on a packed gate|up row: y = silu(g) * u.  gu [rows, 2I], y [rows, I].

EXPORT(swiglu_fwd)
void swiglu_fwd(const f32* gu, f32* y, int rows, int I) {
  for (int r = 0; r < rows; r++) {
    const f32* g = gu + (long)r * 2 * I;
    const f32* u = g + I;
    f32* yr = y + (long)r * I;
    int i = 0;
    for (; i + 4 <= I; i += 4) {
      v4 vg = load(g + i);
      v4 sig = wasm_f32x4_div(splat(1), add(splat(1), v_exp(wasm_f32x4_neg(vg))));
      store(yr + i, mul(mul(vg, sig), load(u + i)));
    }
    for (; i < I; i++) { f32 sig = 1.0f / (1.0f + s_exp(-g[i])); yr[i] = g[i] * sig * u[i]; }
  }
}

// d/dg = dy u sig (1 + g (1 - sig));  d/du = dy g sig.
EXPORT(swiglu_bwd)
void swiglu_bwd(const f32* dy, const f32* gu, f32* dgu, int rows, int I) {
  for (int r = 0; r < rows; r++) {
    const f32* g = gu + (long)r * 2 * I;
    const f32* u = g + I;
    const f32* d = dy + (long)r * I;
    f32* dg = dgu + (long)r * 2 * I;
    f32* du = dg + I;
    int i = 0;
    for (; i + 4 <= I; i += 4) {
      v4 vg = load(g + i), vd = load(d + i);
      v4 sig = wasm_f32x4_div(splat(1), add(splat(1), v_exp(wasm_f32x4_neg(vg))));
      store(dg + i, mul(mul(mul(vd, load(u + i)), sig), add(splat(1), mul(vg, sub(splat(1), sig)))));
      store(du + i, mul(mul(vd, vg), sig));
    }
    for (; i < I; i++) {
      f32 sig = 1.0f / (1.0f + s_exp(-g[i]));
      dg[i] = d[i] * u[i] * sig * (1.0f + g[i] * (1.0f - sig));
      du[i] = d[i] * g[i] * sig;
    }
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Scoring: per row of logits z [rows, V] at temperature T (invT = 1/T), with p = softmax(z invT):
//   lp[r]  = log p[target[r]]   (0 when target < 0: a position with nothing to predict)
//   ent[r] = -sum p log p
// Backward: dz = invT * (dlp (onehot - p) - dent p (log p + ent)).

static inline f32 row_max(const f32* z, int V, f32 invT) {
  f32 m = NEG_INF;
  for (int i = 0; i < V; i++) { f32 v = z[i] * invT; if (v > m) m = v; }
  return m;
}

// log sum exp(z invT), given m = max(z invT).
static inline f32 row_lse(const f32* z, int V, f32 invT, f32 m) {
  v4 vm = splat(m), vi = splat(invT), acc = splat(0);
  int i = 0;
  for (; i + 4 <= V; i += 4) acc = add(acc, v_exp(sub(mul(load(z + i), vi), vm)));
  f32 s = hsum(acc);
  for (; i < V; i++) s += s_exp(z[i] * invT - m);
  return m + s_log(s);
}

// sum p z invT, with log p = z invT - lse.
static inline f32 row_pz(const f32* z, int V, f32 invT, f32 lse) {
  v4 vl = splat(lse), vi = splat(invT), acc = splat(0);
  int i = 0;
  for (; i + 4 <= V; i += 4) { v4 zz = mul(load(z + i), vi); acc = add(acc, mul(v_exp(sub(zz, vl)), zz)); }
  f32 pz = hsum(acc);
  for (; i < V; i++) { f32 zz = z[i] * invT; pz += s_exp(zz - lse) * zz; }
  return pz;
}

EXPORT(logprob_fwd)
void logprob_fwd(const f32* z, const int* target, f32* lp, f32* ent, int rows, int V, f32 invT) {
  for (int r = 0; r < rows; r++) {
    const f32* zr = z + (long)r * V;
    f32 lse = row_lse(zr, V, invT, row_max(zr, V, invT));
    ent[r] = lse - row_pz(zr, V, invT, lse);   // entropy = lse - sum p z invT
    int t = target[r];
    lp[r] = t >= 0 ? zr[t] * invT - lse : 0;
  }
}

EXPORT(logprob_bwd)
void logprob_bwd(const f32* dlp, const f32* dent, const f32* z, const int* target, f32* dz, int rows, int V, f32 invT) {
  for (int r = 0; r < rows; r++) {
    const f32* zr = z + (long)r * V;
    f32* dr = dz + (long)r * V;
    f32 lse = row_lse(zr, V, invT, row_max(zr, V, invT));
    f32 H = lse - row_pz(zr, V, invT, lse);
    v4 vl = splat(lse), vi = splat(invT);
    int i;
    int t = target[r];
    f32 g = t >= 0 ? dlp[r] : 0, ge = dent[r];   // without a target, lp is the constant 0
    // dz_i = invT (-(g + ge (log p_i + H)) p_i) + invT g [i == t];  log p_i = z_i invT - lse
    v4 vg = splat(g), vge = splat(ge), vH = splat(H);
    for (i = 0; i + 4 <= V; i += 4) {
      v4 logp = sub(mul(load(zr + i), vi), vl);
      v4 p = v_exp(logp);
      store(dr + i, mul(vi, wasm_f32x4_neg(mul(p, add(vg, mul(vge, add(logp, vH)))))));
    }
    for (; i < V; i++) {
      f32 logp = zr[i] * invT - lse;
      dr[i] = invT * -(s_exp(logp) * (g + ge * (logp + H)));
    }
    if (t >= 0) dr[t] += invT * g;
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Softmax attention of nq query rows (1 or 2) over the same keys: o[r] = sum_j p_rj v_j over keys j = 0 .. n-1 whose
// mask is set, with p_r = softmax(q[r] . k_j scale). Keys and values are rows of stride `kstride`, read from k0 / v0
// instead for the groups of four keys below `shared` (the same values there: see attn_cached). Row r's scores go to
// scratch + r * sstride (n rounded up to 4 floats each). A row that sees no key outputs zeros.
// The keys go by four at a time, in the groups of four listed in `groups` (their first slots, ascending; those with
// j + 4 <= n count), then one at a time from n rounded down to 4. A group of four keys that are all masked is left out
// of the list (attn_cached's visible_groups): in a multi-turn rollout the KV cache keeps every earlier turn while the
// context window shows only the last, so most keys are masked. A masked key adds an exact 0 to the sum and to o
// either way, so leaving it out changes no bit.
INLINE void attend_rows(int nq, const f32* const* q, const f32* k, const f32* v, const f32* k0, const f32* v0,
                        int shared, int kstride, const f32* mask, const int* groups, int ngroups, int n, f32* const* o,
                        f32* scratch, int sstride, int hd, f32 scale) {
  v4 vscale = splat(scale), vninf = splat(NEG_INF), vmax[NQ_MAX], s[NQ_MAX];
  f32* sc[NQ_MAX];
  for (int r = 0; r < nq; r++) vmax[r] = vninf, sc[r] = scratch + r * sstride;
  int j, g, tail = n & ~3;
  for (g = 0; g < ngroups && (j = groups[g]) < tail; g++) {
    v4 m = load(mask + j);
    const f32* kj = (j + 4 <= shared ? k0 : k) + (long)j * kstride;
    dot4(nq, q, kj, kj + kstride, kj + 2 * kstride, kj + 3 * kstride, hd, s);
    for (int r = 0; r < nq; r++) {
      v4 x = wasm_v128_bitselect(mul(s[r], vscale), vninf, wasm_f32x4_ne(m, splat(0)));
      store(sc[r] + j, x);
      vmax[r] = wasm_f32x4_max(vmax[r], x);
    }
  }
  f32 mx[NQ_MAX], sum[NQ_MAX];
  for (int r = 0; r < nq; r++) mx[r] = hmax(vmax[r]);
  for (j = tail; j < n; j++) {
    for (int r = 0; r < nq; r++) {
      f32 x = mask[j] != 0 ? dot(q[r], k + (long)j * kstride, hd) * scale : NEG_INF;
      sc[r][j] = x;
      if (x > mx[r]) mx[r] = x;
    }
  }
  v4 vm[NQ_MAX], vsum[NQ_MAX], p[NQ_MAX];
  for (int r = 0; r < nq; r++) zero(o[r], hd), vm[r] = splat(mx[r]), vsum[r] = splat(0);
  for (g = 0; g < ngroups && (j = groups[g]) < tail; g++) {
    v4 m = load(mask + j);
    // exp of a masked score (-inf) is clamped to exp(-87), so it is zeroed by the mask explicitly.
    v4 keep = wasm_v128_and(wasm_f32x4_ne(m, splat(0)), splat(1));
    for (int r = 0; r < nq; r++) {
      p[r] = mul(v_exp(sub(load(sc[r] + j), vm[r])), keep);
      vsum[r] = add(vsum[r], p[r]);
    }
    const f32* vj = (j + 4 <= shared ? v0 : v) + (long)j * kstride;
    axpy4(nq, o, p, vj, vj + kstride, vj + 2 * kstride, vj + 3 * kstride, hd);
  }
  for (int r = 0; r < nq; r++) sum[r] = hsum(vsum[r]);
  for (j = tail; j < n; j++) {
    if (mask[j] == 0) continue;
    for (int r = 0; r < nq; r++) {
      f32 e = s_exp(sc[r][j] - mx[r]);
      sum[r] += e;
      axpy(o[r], e, v + (long)j * kstride, hd);
    }
  }
  for (int r = 0; r < nq; r++) {
    if (mx[r] == NEG_INF) {   // no key visible (its sums above are NaN)
      zero(o[r], hd);
      continue;
    }
    v4 inv = splat(1.0f / sum[r]);
    for (int d = 0; d < hd; d += 4) store(o[r] + d, mul(load(o[r] + d), inv));
  }
}

// Causal self-attention with grouped-query heads over a packed qkv [B*T, W], W = (nH + 2 nKV) hd, forward and
// backward, computed as small matrix products (llm.c's and FlashAttention's shape of the work, on one core):
// the queries go by in blocks of 4 rows, and each block's scores S = Q K^T scale, its probabilities and its output
// P V are register tiles, the keys read from a transposed copy K^T [hd, Tp] so that four keys' products come out of
// one vector multiply. Query head h uses key/value head h / (nH / nKV). The block's scores run up to its last row's
// causal limit; each row's softmax then zeroes the keys its own row does not see (later positions, padding).
// Rows of a last, partial block past T are computed on row i0's data and written to junk rows of the scratch.
//
// scratch (attn_scratch_floats): K^T and V^T [hd, Tp] (Tp = T rounded up to 8), P and dS [4, Tp], junk [4, hd].

#define ATT_QB 4
static inline int att_tp(int T) { return (T + 7) & ~7; }

// kt [hd, tp] <- the hd columns at `col` of rows 0..T-1 (row stride W), zeros in columns T..tp-1.
static void att_transpose(const f32* rows, int W, int col, int T, int hd, int tp, f32* kt) {
  for (int d = 0; d < hd; d++) {
    f32* dst = kt + (long)d * tp;
    const f32* src = rows + col + d;
    int j = 0;
    for (; j < T; j++) dst[j] = src[(long)j * W];
    for (; j < tp; j++) dst[j] = 0;
  }
}

// S[r, j] = scale * a_r . bt[:, j] for the 4 rows a0..a3 and columns j < nk (rounded up to 8; bt has tp columns).
static void att_scores4(const f32* a0, const f32* a1, const f32* a2, const f32* a3, const f32* bt, int tp, int nk,
                        int hd, f32 scale, f32* S) {
  v4 vs = splat(scale);
  for (int j = 0; j < nk; j += 8) {
    v4 c00 = splat(0), c01 = splat(0), c10 = splat(0), c11 = splat(0);
    v4 c20 = splat(0), c21 = splat(0), c30 = splat(0), c31 = splat(0);
    const f32* bp = bt + j;
    for (int d = 0; d < hd; d++, bp += tp) {
      v4 b0 = load(bp), b1 = load(bp + 4), x;
      x = splat(a0[d]); c00 = madd(x, b0, c00); c01 = madd(x, b1, c01);
      x = splat(a1[d]); c10 = madd(x, b0, c10); c11 = madd(x, b1, c11);
      x = splat(a2[d]); c20 = madd(x, b0, c20); c21 = madd(x, b1, c21);
      x = splat(a3[d]); c30 = madd(x, b0, c30); c31 = madd(x, b1, c31);
    }
    store(S + j, mul(c00, vs)); store(S + j + 4, mul(c01, vs));
    store(S + tp + j, mul(c10, vs)); store(S + tp + j + 4, mul(c11, vs));
    store(S + 2 * tp + j, mul(c20, vs)); store(S + 2 * tp + j + 4, mul(c21, vs));
    store(S + 3 * tp + j, mul(c30, vs)); store(S + 3 * tp + j + 4, mul(c31, vs));
  }
}

// y_r = sum_{j < nk} P[r, j] x_j for the 4 rows (x_j: rows of stride xs); y_r is overwritten.
static void att_mix4(const f32* P, int tp, const f32* x, int xs, int nk, int hd, f32* y0, f32* y1, f32* y2, f32* y3) {
  int d = 0;
  for (; d + 8 <= hd; d += 8) {
    v4 c00 = splat(0), c01 = splat(0), c10 = splat(0), c11 = splat(0);
    v4 c20 = splat(0), c21 = splat(0), c30 = splat(0), c31 = splat(0);
    const f32* xp = x + d;
    for (int j = 0; j < nk; j++, xp += xs) {
      v4 x0 = load(xp), x1 = load(xp + 4), p;
      p = splat(P[j]); c00 = madd(p, x0, c00); c01 = madd(p, x1, c01);
      p = splat(P[tp + j]); c10 = madd(p, x0, c10); c11 = madd(p, x1, c11);
      p = splat(P[2 * tp + j]); c20 = madd(p, x0, c20); c21 = madd(p, x1, c21);
      p = splat(P[3 * tp + j]); c30 = madd(p, x0, c30); c31 = madd(p, x1, c31);
    }
    store(y0 + d, c00); store(y0 + d + 4, c01); store(y1 + d, c10); store(y1 + d + 4, c11);
    store(y2 + d, c20); store(y2 + d + 4, c21); store(y3 + d, c30); store(y3 + d + 4, c31);
  }
  for (; d < hd; d += 4) {
    v4 c0 = splat(0), c1 = splat(0), c2 = splat(0), c3 = splat(0);
    const f32* xp = x + d;
    for (int j = 0; j < nk; j++, xp += xs) {
      v4 x0 = load(xp);
      c0 = madd(splat(P[j]), x0, c0); c1 = madd(splat(P[tp + j]), x0, c1);
      c2 = madd(splat(P[2 * tp + j]), x0, c2); c3 = madd(splat(P[3 * tp + j]), x0, c3);
    }
    store(y0 + d, c0); store(y1 + d, c1); store(y2 + d, c2); store(y3 + d, c3);
  }
}

// y_j += sum_r A[r, j] x_r for j < nk (y_j: rows of stride ys; x_r: the 4 rows).
static void att_outer4(const f32* A, int tp, const f32* x0, const f32* x1, const f32* x2, const f32* x3, f32* y, int ys,
                       int nk, int hd) {
  int d = 0;
  for (; d + 8 <= hd; d += 8) {
    v4 a0 = load(x0 + d), a1 = load(x0 + d + 4), b0 = load(x1 + d), b1 = load(x1 + d + 4);
    v4 e0 = load(x2 + d), e1 = load(x2 + d + 4), f0 = load(x3 + d), f1 = load(x3 + d + 4);
    f32* yp = y + d;
    for (int j = 0; j < nk; j++, yp += ys) {
      v4 p0 = splat(A[j]), p1 = splat(A[tp + j]), p2 = splat(A[2 * tp + j]), p3 = splat(A[3 * tp + j]);
      store(yp, madd(p3, f0, madd(p2, e0, madd(p1, b0, madd(p0, a0, load(yp))))));
      store(yp + 4, madd(p3, f1, madd(p2, e1, madd(p1, b1, madd(p0, a1, load(yp + 4))))));
    }
  }
  for (; d < hd; d += 4) {
    v4 a0 = load(x0 + d), b0 = load(x1 + d), e0 = load(x2 + d), f0 = load(x3 + d);
    f32* yp = y + d;
    for (int j = 0; j < nk; j++, yp += ys) {
      v4 p0 = splat(A[j]), p1 = splat(A[tp + j]), p2 = splat(A[2 * tp + j]), p3 = splat(A[3 * tp + j]);
      store(yp, madd(p3, f0, madd(p2, e0, madd(p1, b0, madd(p0, a0, load(yp))))));
    }
  }
}

// One row of scores s[0..nk) -> its probabilities in place: softmax over the keys j < n with mask[j] set, 0 for
// every other j < nk. Returns the log-sum-exp, or -inf (and a row of zeros) when no key is visible.
static f32 att_softmax_row(f32* s, const f32* mask, int n, int nk) {
  f32 mx = NEG_INF;
  for (int j = 0; j < n; j++)
    if (mask[j] != 0 && s[j] > mx) mx = s[j];
  if (mx == NEG_INF) {
    zero(s, nk);
    return NEG_INF;
  }
  v4 vm = splat(mx), vsum = splat(0), one = splat(1);
  int j = 0;
  for (; j + 4 <= n; j += 4) {
    v4 p = mul(v_exp(sub(load(s + j), vm)), wasm_v128_and(wasm_f32x4_ne(load(mask + j), splat(0)), one));
    store(s + j, p);
    vsum = add(vsum, p);
  }
  f32 sum = hsum(vsum);
  for (; j < n; j++) {
    s[j] = mask[j] != 0 ? s_exp(s[j] - mx) : 0;
    sum += s[j];
  }
  for (; j < nk; j++) s[j] = 0;
  f32 inv = 1.0f / sum;
  v4 vinv = splat(inv);
  for (j = 0; j + 4 <= n; j += 4) store(s + j, mul(load(s + j), vinv));
  for (; j < n; j++) s[j] *= inv;
  return mx + s_log(sum);
}

EXPORT(attn_scratch_floats)
int attn_scratch_floats(int T, int hd) { return (2 * hd + 2 * ATT_QB) * att_tp(T) + ATT_QB * hd; }

EXPORT(attn_fwd)
void attn_fwd(const f32* qkv, const f32* mask, f32* out, f32* lse, f32* scratch, int B, int T, int nH, int nKV,
              int hd, f32 scale) {
  int W = (nH + 2 * nKV) * hd, group = nH / nKV, tp = att_tp(T), OW = nH * hd;
  f32 *kt = scratch, *P = scratch + 2 * (long)hd * tp, *junk = P + 2 * ATT_QB * tp;
  for (int b = 0; b < B; b++) {
    const f32* rows = qkv + (long)b * T * W;
    const f32* m = mask + (long)b * T;
    for (int h = 0; h < nH; h++) {
      if (h % group == 0) att_transpose(rows, W, (nH + h / group) * hd, T, hd, tp, kt);
      const f32* vcol = rows + (nH + nKV + h / group) * hd;
      for (int i0 = 0; i0 < T; i0 += ATT_QB) {
        int nk = i0 + ATT_QB < T ? i0 + ATT_QB : T;   // keys the block's last row sees
        const f32* q[ATT_QB];
        f32* o[ATT_QB];
        for (int r = 0; r < ATT_QB; r++) {
          int i = i0 + r < T ? i0 + r : i0;
          q[r] = rows + (long)i * W + h * hd;
          o[r] = i0 + r < T ? out + ((long)b * T + i0 + r) * OW + h * hd : junk + r * hd;
        }
        att_scores4(q[0], q[1], q[2], q[3], kt, tp, nk, hd, scale, P);
        for (int r = 0; r < ATT_QB; r++) {
          f32 l = i0 + r < T ? att_softmax_row(P + r * tp, m, i0 + r + 1, nk) : (zero(P + r * tp, nk), NEG_INF);
          if (i0 + r < T) lse[((long)b * nH + h) * T + i0 + r] = l;
        }
        att_mix4(P, tp, vcol, W, nk, hd, o[0], o[1], o[2], o[3]);
      }
    }
  }
}

// Gradient of attn_fwd with respect to qkv, recomputing the probabilities from lse (FlashAttention's backward):
//   P = exp(S - lse), D = dout . out, dP = dout V^T, dS = P (dP - D) scale;  dQ = dS K, dK += dS^T Q, dV += P^T dout.
EXPORT(attn_bwd)
void attn_bwd(const f32* dout, const f32* qkv, const f32* mask, const f32* out, const f32* lse, f32* dqkv, f32* scratch,
              int B, int T, int nH, int nKV, int hd, f32 scale) {
  int W = (nH + 2 * nKV) * hd, group = nH / nKV, tp = att_tp(T), OW = nH * hd;
  f32 *kt = scratch, *vt = scratch + (long)hd * tp, *P = vt + (long)hd * tp, *dS = P + ATT_QB * tp;
  f32* junk = dS + ATT_QB * tp;
  zero(dqkv, B * T * W);
  for (int b = 0; b < B; b++) {
    const f32* rows = qkv + (long)b * T * W;
    f32* drows = dqkv + (long)b * T * W;
    const f32* m = mask + (long)b * T;
    for (int h = 0; h < nH; h++) {
      int kOff = (nH + h / group) * hd, vOff = (nH + nKV + h / group) * hd;
      if (h % group == 0) {
        att_transpose(rows, W, kOff, T, hd, tp, kt);
        att_transpose(rows, W, vOff, T, hd, tp, vt);
      }
      for (int i0 = 0; i0 < T; i0 += ATT_QB) {
        int nk = i0 + ATT_QB < T ? i0 + ATT_QB : T;
        const f32 *q[ATT_QB], *dO[ATT_QB];
        f32* dq[ATT_QB];
        for (int r = 0; r < ATT_QB; r++) {
          int i = i0 + r < T ? i0 + r : i0;
          q[r] = rows + (long)i * W + h * hd;
          dO[r] = dout + ((long)b * T + i) * OW + h * hd;
          dq[r] = i0 + r < T ? drows + (long)(i0 + r) * W + h * hd : junk + r * hd;
        }
        att_scores4(q[0], q[1], q[2], q[3], kt, tp, nk, hd, scale, P);
        att_scores4(dO[0], dO[1], dO[2], dO[3], vt, tp, nk, hd, 1.0f, dS);   // dP
        for (int r = 0; r < ATT_QB; r++) {
          f32* p = P + r * tp;
          f32* ds = dS + r * tp;
          f32 l = i0 + r < T ? lse[((long)b * nH + h) * T + i0 + r] : NEG_INF;
          if (l == NEG_INF) {
            zero(p, nk);
            zero(ds, nk);
            continue;
          }
          int n = i0 + r + 1;   // keys this row sees causally
          f32 D = dot(dO[r], out + ((long)b * T + i0 + r) * OW + h * hd, hd);
          v4 vl = splat(l), vD = splat(D), vscale = splat(scale), one = splat(1);
          int j = 0;
          for (; j + 4 <= n; j += 4) {
            v4 pj = mul(v_exp(sub(load(p + j), vl)), wasm_v128_and(wasm_f32x4_ne(load(m + j), splat(0)), one));
            store(p + j, pj);
            store(ds + j, mul(mul(pj, sub(load(ds + j), vD)), vscale));
          }
          for (; j < n; j++) {
            p[j] = m[j] != 0 ? s_exp(p[j] - l) : 0;
            ds[j] = p[j] * (ds[j] - D) * scale;
          }
          for (; j < nk; j++) p[j] = ds[j] = 0;
        }
        att_mix4(dS, tp, rows + kOff, W, nk, hd, dq[0], dq[1], dq[2], dq[3]);
        att_outer4(dS, tp, q[0], q[1], q[2], q[3], drows + kOff, W, nk, hd);
        att_outer4(P, tp, dO[0], dO[1], dO[2], dO[3], drows + vOff, W, nk, hd);
      }
    }
  }
}

// The first slots j of the groups of four slots j .. j+3 < n with at least one set in `mask`, ascending; returns how many.
static int visible_groups(const f32* mask, int n, int* groups) {
  int count = 0;
  for (int j = 0; j + 4 <= n; j += 4)
    if (wasm_v128_any_true(load(mask + j))) groups[count++] = j;
  return count;
}

// Attention for generation with a KV cache: cacheK, cacheV [B, C, nKV hd] are updated IN PLACE (the caller owns
// them; see wasm.ts): rows slot .. slot+T-1 receive the keys and values of qkv [B*T, W]; then query t of row b sees
// cache slots s <= slot + t with mask[b, s] = 1. out [B*T, nH hd]; scratch: at least 2 (C + 4) + C / 4 + 4 floats.
// The query heads that share a key/value head go through it two at a time (attend_rows): generation reads the
// cache once per pair of heads, not once per head. `shared`: the cache's slots below it hold the same keys and values
// in every row (cache_shared_prefix found them so), and are read from row 0's copy: a decode step is limited by
// reading the cache from memory, and the rows of a rollout batch begin with the same system prompt.
EXPORT(attn_cached)
void attn_cached(const f32* qkv, f32* cacheK, f32* cacheV, const f32* mask, f32* out, f32* scratch, int B, int T, int C,
                 int slot, int nH, int nKV, int hd, f32 scale, int shared) {
  int W = (nH + 2 * nKV) * hd, KW = nKV * hd, group = nH / nKV, ss = C + 4;
  for (int b = 0; b < B; b++) {
    for (int t = 0; t < T; t++) {
      const f32* src = qkv + ((long)b * T + t) * W;
      f32* kd = cacheK + ((long)b * C + slot + t) * KW;
      f32* vd = cacheV + ((long)b * C + slot + t) * KW;
      for (int d = 0; d < KW; d += 4) { store(kd + d, load(src + nH * hd + d)); store(vd + d, load(src + nH * hd + KW + d)); }
    }
  }
  int* groups = (int*)(scratch + 2 * ss);
  for (int b = 0; b < B; b++) {
    const f32* m = mask + (long)b * C;
    int ngroups = visible_groups(m, slot + T, groups);
    for (int g = 0; g < nKV; g++) {
      const f32 *k0 = cacheK + g * hd, *v0 = cacheV + g * hd;
      const f32* kb = k0 + (long)b * C * KW;
      const f32* vb = v0 + (long)b * C * KW;
      for (int t = 0; t < T; t++) {
        const f32* q = qkv + ((long)b * T + t) * W;
        f32* o = out + ((long)b * T + t) * nH * hd;
        int h = g * group, end = h + group, n = slot + t + 1;
        for (; h + 2 <= end; h += 2) {
          const f32* qs[2] = {q + h * hd, q + (h + 1) * hd};
          f32* os[2] = {o + h * hd, o + (h + 1) * hd};
          attend_rows(2, qs, kb, vb, k0, v0, shared, KW, m, groups, ngroups, n, os, scratch, ss, hd, scale);
        }
        if (h < end) {
          const f32* qs[1] = {q + h * hd};
          f32* os[1] = {o + h * hd};
          attend_rows(1, qs, kb, vb, k0, v0, shared, KW, m, groups, ngroups, n, os, scratch, ss, hd, scale);
        }
      }
    }
  }
}

// The number of leading cache slots (at most `upto`) whose keys and values are the same bits in every row of
// cacheK, cacheV [B, C, KW] as in row 0: what attn_cached may read from row 0.
EXPORT(cache_shared_prefix)
int cache_shared_prefix(const int* cacheK, const int* cacheV, int B, int C, int KW, int upto) {
  int n = upto;
  for (int b = 1; b < B && n > 0; b++) {
    const int *k = cacheK + (long)b * C * KW, *v = cacheV + (long)b * C * KW;
    for (int s = 0; s < n; s++) {
      int same = 1;
      for (int d = 0; d < KW; d++) same &= (k[(long)s * KW + d] == cacheK[(long)s * KW + d]) & (v[(long)s * KW + d] == cacheV[(long)s * KW + d]);
      if (!same) { n = s; break; }
    }
  }
  return n;
}

// ---------------------------------------------------------------------------------------------------------------
// Embedding lookup: out[i] = table[ids[i]] (rows of H floats); its gradient adds dy's rows into a zeroed table.

EXPORT(embed_fwd)
void embed_fwd(const f32* table, const int* ids, f32* out, int n, int H) {
  for (int i = 0; i < n; i++) {
    const f32* src = table + (long)ids[i] * H;
    f32* dst = out + (long)i * H;
    int d = 0;
    for (; d + 4 <= H; d += 4) store(dst + d, load(src + d));
    for (; d < H; d++) dst[d] = src[d];
  }
}

EXPORT(embed_bwd)
void embed_bwd(const f32* dy, const int* ids, f32* dtable, int n, int V, int H) {
  zero(dtable, V * H);
  for (int i = 0; i < n; i++) {
    f32* dst = dtable + (long)ids[i] * H;
    const f32* src = dy + (long)i * H;
    int d = 0;
    for (; d + 4 <= H; d += 4) store(dst + d, add(load(dst + d), load(src + d)));
    for (; d < H; d++) dst[d] += src[d];
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Sampling by inverse CDF: row r's token is the first i whose cumulative probability under softmax(z invT)
// reaches u[r] times the total (at most V - 1), the rule of sampling.ts's stock-op path.

// The exponentials go four at a time (each lane's the same bits as s_exp's) and are added one by one, in order.
EXPORT(sample_rows)
void sample_rows(const f32* z, const f32* u, int* out, int rows, int V, f32 invT) {
  v4 vi = splat(invT);
  for (int r = 0; r < rows; r++) {
    const f32* zr = z + (long)r * V;
    f32 m = row_max(zr, V, invT), total = 0;
    v4 vm = splat(m);
    int i = 0;
    for (; i + 4 <= V; i += 4) {
      v4 e = v_exp(sub(mul(load(zr + i), vi), vm));
      total += wasm_f32x4_extract_lane(e, 0);
      total += wasm_f32x4_extract_lane(e, 1);
      total += wasm_f32x4_extract_lane(e, 2);
      total += wasm_f32x4_extract_lane(e, 3);
    }
    for (; i < V; i++) total += s_exp(zr[i] * invT - m);
    f32 target = u[r] * total, cum = 0;
    int pick = -1;
    for (i = 0; i + 4 <= V && pick < 0; i += 4) {
      v4 e = v_exp(sub(mul(load(zr + i), vi), vm));
      if ((cum += wasm_f32x4_extract_lane(e, 0)) >= target) pick = i;
      else if ((cum += wasm_f32x4_extract_lane(e, 1)) >= target) pick = i + 1;
      else if ((cum += wasm_f32x4_extract_lane(e, 2)) >= target) pick = i + 2;
      else if ((cum += wasm_f32x4_extract_lane(e, 3)) >= target) pick = i + 3;
    }
    for (; i < V && pick < 0; i++)
      if ((cum += s_exp(zr[i] * invT - m)) >= target) pick = i;
    out[r] = pick < 0 ? V - 1 : pick;
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Optimizer. Tensors are passed as tables of addresses (ptrs[i], sizes[i] floats), so one call covers every
// parameter of a model.

// out[0] = sum over the tensors of sum(g^2) (the squared global grad norm; non-finite if any gradient is).
EXPORT(sum_squares)
void sum_squares(const int* ptrs, const int* sizes, int n, f32* out) {
  double total = 0;
  for (int t = 0; t < n; t++) {
    const f32* g = (const f32*)ptrs[t];
    v4 acc = splat(0);
    int i = 0;
    for (; i + 4 <= sizes[t]; i += 4) { v4 x = load(g + i); acc = add(acc, mul(x, x)); }
    f32 s = hsum(acc);
    for (; i < sizes[t]; i++) s += g[i] * g[i];
    total += s;
  }
  out[0] = (f32)total;
}

// AdamW (PyTorch's, with the gradient first scaled by coef for clipping), over every parameter at once, IN PLACE:
//   p = p (1 - lr wd);  m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2;  p = p - step (m / (sqrt(v) / bc2 + eps))
// m and v are flat, the parameters' concatenation in table order. The result is checked first: if any new value
// would be non-finite, nothing is written and 0 is returned (1 when applied).
static inline v4 v_isfinite(v4 x) { return wasm_f32x4_lt(wasm_f32x4_abs(x), splat(__builtin_inff())); }

EXPORT(adamw_step)
int adamw_step(const int* pptrs, const int* gptrs, const int* sizes, int n, f32* m, f32* v, f32 coef, f32 decay,
               f32 b1, f32 omb1, f32 b2, f32 omb2, f32 stepSize, f32 bc2, f32 eps) {
  v4 vc = splat(coef), vd = splat(decay), vb1 = splat(b1), vo1 = splat(omb1), vb2 = splat(b2), vo2 = splat(omb2);
  v4 vs = splat(stepSize), vbc = splat(bc2), ve = splat(eps);
  for (int pass = 0; pass < 2; pass++) {   // pass 0 only checks, pass 1 writes
    v4 ok = wasm_i32x4_splat(-1);
    int okScalar = 1;
    long off = 0;
    for (int t = 0; t < n; t++) {
      f32* p = (f32*)pptrs[t];
      const f32* g = (const f32*)gptrs[t];
      f32* mt = m + off;
      f32* vt = v + off;
      int i = 0;
      for (; i + 4 <= sizes[t]; i += 4) {
        v4 gg = mul(load(g + i), vc);
        v4 nm = add(mul(load(mt + i), vb1), mul(gg, vo1));
        v4 nv = add(mul(load(vt + i), vb2), mul(mul(gg, gg), vo2));
        v4 den = add(wasm_f32x4_div(wasm_f32x4_sqrt(nv), vbc), ve);
        v4 np = sub(mul(load(p + i), vd), mul(wasm_f32x4_div(nm, den), vs));
        if (pass == 0) ok = wasm_v128_and(ok, wasm_v128_and(v_isfinite(np), wasm_v128_and(v_isfinite(nm), v_isfinite(nv))));
        else { store(p + i, np); store(mt + i, nm); store(vt + i, nv); }
      }
      for (; i < sizes[t]; i++) {
        f32 gg = g[i] * coef;
        f32 nm = mt[i] * b1 + gg * omb1;
        f32 nv = vt[i] * b2 + (gg * gg) * omb2;
        f32 den = __builtin_sqrtf(nv) / bc2 + eps;
        f32 np = p[i] * decay - (nm / den) * stepSize;
        if (pass == 0) okScalar &= (np - np == 0) & (nm - nm == 0) & (nv - nv == 0);
        else { p[i] = np; mt[i] = nm; vt[i] = nv; }
      }
      off += sizes[t];
    }
    if (pass == 0 && !(okScalar && wasm_i32x4_all_true(ok))) return 0;
  }
  return 1;
}

// ---------------------------------------------------------------------------------------------------------------
// Matrix product C [M, N] = op(A) op(B) (+ bias [N]) for the three forms of a linear layer, with the transposes
// folded into the loads: op(A) is A [M, K], or A stored [K, M] (transA); op(B) is B [K, N], or B stored [N, K]
// (transB). So y = x W^T (W [out, in]) is (x, W, transB), dx = dy W is (dy, W), dW = dy^T x is (dy, x, transA).
//
// Blocking: the columns are taken MM_NC at a time and the inner dimension MM_KC at a time. Each such block of op(B)
// is packed into `pack` (the caller's scratch, MM_KC * MM_NC floats) as panels of MM_NR columns, k-major
// ([panel][k][MM_NR], zeros past column N), so that the micro-kernel reads its panel sequentially and the block stays
// in L2 while every row of op(A) passes over it. The micro-kernel holds an MM_MR x MM_NR block of C in v128
// accumulators: per k, two loads of the panel, one splat load of op(A) per row, a multiply and an add per
// accumulator. op(A) is read in place (one float per row and k), so neither of its layouts needs packing. A K-block
// after the first adds to what C holds; the first starts from the bias (or zero). Every element is therefore
// bias + a0 b0 + a1 b1 + ... summed in k order, whatever the blocking, and the same from call to call.
#define MM_MR 4
#define MM_NR 8
#define MM_KC 256
#define MM_NC 256

static inline int imin(int a, int b) { return a < b ? a : b; }

// The first n (0..4 or more) floats at p as a v128, zeros past n; never reads past p[n - 1].
static inline v4 load_part(const f32* p, int n) {
  if (n >= 4) return load(p);
  return wasm_f32x4_make(n > 0 ? p[0] : 0, n > 1 ? p[1] : 0, n > 2 ? p[2] : 0, 0);
}

static inline void store_part(f32* p, v4 v, int n) {
  if (n >= 4) { store(p, v); return; }
  if (n > 0) p[0] = wasm_f32x4_extract_lane(v, 0);
  if (n > 1) p[1] = wasm_f32x4_extract_lane(v, 1);
  if (n > 2) p[2] = wasm_f32x4_extract_lane(v, 2);
}

// Packs op(B)[k0 .. k0+kc, n0 .. n0+nc] into panels of MM_NR columns (see above).
static void mm_pack_b(const f32* B, f32* pack, int N, int K, int transB, int k0, int kc, int n0, int nc) {
  for (int p = 0; p < nc; p += MM_NR) {
    f32* dst = pack + (long)p * kc;
    int nr = imin(nc - p, MM_NR);
    if (!transB) {
      const f32* src = B + (long)k0 * N + n0 + p;
      for (int k = 0; k < kc; k++, src += N, dst += MM_NR) {
        store(dst, load_part(src, nr));
        store(dst + 4, load_part(src + 4, nr - 4));
      }
    } else {
      // Rows of B are columns of op(B): four k at a time from each of the panel's rows, transposed 4 x 4.
      const f32* r[MM_NR];
      for (int j = 0; j < MM_NR; j++) r[j] = B + (long)(n0 + p + imin(j, nr - 1)) * K + k0;
      int k = 0;
      for (; k + 4 <= kc; k += 4, dst += 4 * MM_NR) {
        for (int h = 0; h < MM_NR; h += 4) {
          v4 x0 = load(r[h] + k), x1 = load(r[h + 1] + k), x2 = load(r[h + 2] + k), x3 = load(r[h + 3] + k);
          v4 t0 = wasm_i32x4_shuffle(x0, x1, 0, 4, 1, 5), t1 = wasm_i32x4_shuffle(x0, x1, 2, 6, 3, 7);
          v4 t2 = wasm_i32x4_shuffle(x2, x3, 0, 4, 1, 5), t3 = wasm_i32x4_shuffle(x2, x3, 2, 6, 3, 7);
          store(dst + h, wasm_i32x4_shuffle(t0, t2, 0, 1, 4, 5));
          store(dst + MM_NR + h, wasm_i32x4_shuffle(t0, t2, 2, 3, 6, 7));
          store(dst + 2 * MM_NR + h, wasm_i32x4_shuffle(t1, t3, 0, 1, 4, 5));
          store(dst + 3 * MM_NR + h, wasm_i32x4_shuffle(t1, t3, 2, 3, 6, 7));
        }
      }
      for (; k < kc; k++, dst += MM_NR)
        for (int j = 0; j < MM_NR; j++) dst[j] = r[j][k];
      // Columns past N were read as copies of the last one; zero them.
      if (nr < MM_NR)
        for (int kk = 0; kk < kc; kk++)
          for (int j = nr; j < MM_NR; j++) pack[(long)p * kc + (long)kk * MM_NR + j] = 0;
    }
  }
}

// C[0 .. mr, 0 .. nr] (row stride ldc) of one K-block: rows of op(A) at a + r sAi, stepping sAk per k; the panel as
// packed. Rows past mr repeat row mr - 1 (computed, not stored), so every load stays inside A and C.
static inline void mm_tile(const f32* a, long sAi, long sAk, const f32* panel, const f32* bias, f32* C, int ldc,
                           int mr, int nr, int kc, int first) {
  const f32 *a0 = a, *a1 = a + imin(1, mr - 1) * sAi, *a2 = a + imin(2, mr - 1) * sAi, *a3 = a + imin(3, mr - 1) * sAi;
  f32 *c0 = C, *c1 = C + (long)imin(1, mr - 1) * ldc, *c2 = C + (long)imin(2, mr - 1) * ldc,
      *c3 = C + (long)imin(3, mr - 1) * ldc;
  v4 x00, x01, x10, x11, x20, x21, x30, x31;
  if (first) {
    v4 b0 = bias ? load_part(bias, nr) : splat(0), b1 = bias ? load_part(bias + 4, nr - 4) : splat(0);
    x00 = x10 = x20 = x30 = b0;
    x01 = x11 = x21 = x31 = b1;
  } else {
    x00 = load_part(c0, nr), x01 = load_part(c0 + 4, nr - 4);
    x10 = load_part(c1, nr), x11 = load_part(c1 + 4, nr - 4);
    x20 = load_part(c2, nr), x21 = load_part(c2 + 4, nr - 4);
    x30 = load_part(c3, nr), x31 = load_part(c3 + 4, nr - 4);
  }
  for (int k = 0; k < kc; k++, panel += MM_NR, a0 += sAk, a1 += sAk, a2 += sAk, a3 += sAk) {
    v4 b0 = load(panel), b1 = load(panel + 4), v;
    v = wasm_v128_load32_splat(a0), x00 = madd(v, b0, x00), x01 = madd(v, b1, x01);
    v = wasm_v128_load32_splat(a1), x10 = madd(v, b0, x10), x11 = madd(v, b1, x11);
    v = wasm_v128_load32_splat(a2), x20 = madd(v, b0, x20), x21 = madd(v, b1, x21);
    v = wasm_v128_load32_splat(a3), x30 = madd(v, b0, x30), x31 = madd(v, b1, x31);
  }
  store_part(c0, x00, nr), store_part(c0 + 4, x01, nr - 4);
  if (mr > 1) store_part(c1, x10, nr), store_part(c1 + 4, x11, nr - 4);
  if (mr > 2) store_part(c2, x20, nr), store_part(c2 + 4, x21, nr - 4);
  if (mr > 3) store_part(c3, x30, nr), store_part(c3 + 4, x31, nr - 4);
}

// C = op(A) op(B) (+ bias when hasBias is 1), or C += op(A) op(B) when hasBias is 2 (a residual stream C already
// holds); pack: MM_KC * MM_NC floats of scratch (see above).
EXPORT(matmul)
void matmul(const f32* A, const f32* B, const f32* bias, int hasBias, f32* C, f32* pack, int M, int N, int K,
            int transA, int transB) {
  long sAi = transA ? 1 : K, sAk = transA ? M : 1;
  if (K == 0) {
    if (hasBias == 2) return;
    for (int i = 0; i < M; i++)
      for (int j = 0; j < N; j++) C[(long)i * N + j] = hasBias ? bias[j] : 0;
    return;
  }
  for (int n0 = 0; n0 < N; n0 += MM_NC) {
    int nc = imin(N - n0, MM_NC);
    for (int k0 = 0; k0 < K; k0 += MM_KC) {
      int kc = imin(K - k0, MM_KC);
      mm_pack_b(B, pack, N, K, transB, k0, kc, n0, nc);
      for (int i0 = 0; i0 < M; i0 += MM_MR) {
        const f32* a = A + i0 * sAi + k0 * sAk;
        for (int p = 0; p < nc; p += MM_NR)
          mm_tile(a, sAi, sAk, pack + (long)p * kc, hasBias == 1 ? bias + n0 + p : 0, C + (long)i0 * N + n0 + p, N,
                  imin(M - i0, MM_MR), imin(nc - p, MM_NR), kc, k0 == 0 && hasBias != 2);
      }
    }
  }
}
