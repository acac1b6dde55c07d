"""The PyTorch side of `ragen bench --only matmul`: the same products as src/bench/matmul.ts, timed the same way.
torch_bench.py runs it when its stdin spec has "matmuls".

Spec: {"seconds": S, "matmuls": [{"key", "m", "n", "k", "transposeA", "transposeB"}]}: C [m, n] = op(A) op(B), A
stored [m, k] or (transposeA) [k, m], B [k, n] or (transposeB) [n, k], random f32 on the device; the product is
A.t() / B.t() views into torch.matmul, as a linear layer's forward and backward run it (no copy).
Results: "<key> ms" = median ms per call. Timing as src/bench/matmul.ts: one untimed call, then samples of k calls
followed by a sync (torch.cuda.synchronize on CUDA), k chosen so a sample lasts about SAMPLE_MS; samples until
`seconds` have passed (at least MIN_SAMPLES); ms per call = the median sample / k.
f32 as the tfjs side: TF32 stays off (torch.backends.cuda.matmul.allow_tf32, False by default); its value is noted.
On CUDA each product is timed again in bf16 (the operands cast once, untimed; tensor cores, f32 accumulation), as
RAGEN trains: "<key> bf16 ms", the figure our own f16 pipelines are measured against.
"""
import time

import torch

from torch_common import log

SAMPLE_MS = 20
MIN_SAMPLES = 3
MAX_SAMPLES = 200
MAX_CALLS_PER_SAMPLE = 256


def ms_per_call(call, sync, seconds):
    def timed(times):
        start = time.perf_counter()
        for _ in range(times):
            call()
        sync()
        return (time.perf_counter() - start) * 1000

    timed(1)   # kernel selection, allocator
    single = timed(1)
    k = max(1, min(MAX_CALLS_PER_SAMPLE, round(SAMPLE_MS / max(single, 1e-3))))
    samples = []
    start = time.perf_counter()
    while len(samples) < MIN_SAMPLES or (time.perf_counter() - start < seconds and len(samples) < MAX_SAMPLES):
        samples.append(timed(k) / k)
    samples.sort()
    return samples[len(samples) // 2]


def bench_matmuls(spec, device, results, notes, seed):
    seconds = float(spec.get("seconds", 1))
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    if device.type == "cuda":
        notes.append(f"matmul: f32, torch.backends.cuda.matmul.allow_tf32 = {torch.backends.cuda.matmul.allow_tf32}")
    gen = torch.Generator(device=device).manual_seed(seed)
    for case in spec["matmuls"]:
        m, n, k = case["m"], case["n"], case["k"]
        ta, tb = case["transposeA"], case["transposeB"]
        a = torch.rand(*((k, m) if ta else (m, k)), generator=gen, device=device) * 2 - 1
        b = torch.rand(*((n, k) if tb else (k, n)), generator=gen, device=device) * 2 - 1
        left, right = (a.t() if ta else a), (b.t() if tb else b)
        ms = ms_per_call(lambda: torch.matmul(left, right), sync, seconds)
        results[f"{case['key']} ms"] = ms
        log(f"torch matmul {case['key']}: {ms:.3f} ms, {2 * m * n * k / (ms * 1e6):.1f} GFLOP/s")
        if device.type == "cuda":
            left16, right16 = left.to(torch.bfloat16), right.to(torch.bfloat16)
            ms16 = ms_per_call(lambda: torch.matmul(left16, right16), sync, seconds)
            results[f"{case['key']} bf16 ms"] = ms16
            log(f"torch matmul {case['key']} bf16: {ms16:.3f} ms, {2 * m * n * k / (ms16 * 1e6):.1f} GFLOP/s")
            del left16, right16
        del a, b, left, right
