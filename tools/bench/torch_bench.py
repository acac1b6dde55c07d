"""The PyTorch baseline of `ragen bench`: the same model shapes, workloads and definitions as src/bench/model.ts,
measured with the independent PyTorch Qwen2 of tools/parity/reference.py.

`ragen bench --only model,torch` runs this as a child process and writes the spec to its stdin, so both sides
measure exactly the same thing; run it by hand the same way:
    node bin/ragen.js bench --only torch --shapes tiny          # or, with a spec of your own:
    /usr/bin/python3 tools/bench/torch_bench.py --threads 1 < spec.json
Spec (JSON): {"seconds": S, "shapes": [{"name", "config" (HF Qwen2 config.json keys), "workload": {"trainBatch",
"trainSeq", "genBatch", "promptLen", "newTokens", "warmup", "genBatches" (optional: more batch sizes, keys
"<shape> generate b<N> tokens/s")}, "bytes": {"train", "generate"} (optional estimates)}]}.
Prints one JSON object on stdout: {"torch", "device", "threads", "results": {"<shape> train tokens/s": x, ...},
"notes": [...]}; progress goes to stderr.
A spec with "steps" (and no shapes) times whole training steps instead: see torch_step.py; one with "matmuls", single
matrix products (ragen bench --only matmul): see torch_matmul.py.

Definitions (the same as src/bench/model.ts):
  training tokens/s  = trainBatch * trainSeq / seconds per update; an update = forward, log-probs and entropy,
                       loss = -mean(log-prob) - 0.001 * mean(entropy), backward, clip_grad_norm_(1.0), AdamW step.
  generated tokens/s = genBatch * newTokens / seconds per call; a call = prefill of genBatch prompts of promptLen
                       tokens, then newTokens KV-cache decode steps sampled at temperature 1.
Means over timed repetitions after `warmup` untimed ones. Threads: tfjs's wasm and cpu backends run on one thread
in Node, so the fair CPU comparison is torch.set_num_threads(1) (the default here); say so next to the figures.
"""
import argparse
import json
import math
import sys
import time

try:
    import torch
except ImportError:
    sys.stderr.write(
        f"torch_bench: {sys.executable} cannot import torch; install Debian's python3-torch "
        "(apt-get install python3-torch) and run with /usr/bin/python3\n"
    )
    sys.exit(3)

sys.dont_write_bytecode = True  # no __pycache__ left in tools/bench or tools/parity by a benchmark run
from torch_common import forward_cached, init_weights, log, reference, weight_shapes  # noqa: E402


def generate(config, w, prompts, new_tokens, gen):
    """Batched sampling at temperature 1 with a KV cache; returns the new tokens [B, new_tokens]."""
    b, t = prompts.shape
    cache = []
    positions = torch.arange(t, device=prompts.device).expand(b, t)
    logits = forward_cached(config, w, prompts, positions, cache)
    out = []
    for step in range(new_tokens):
        # Sampled where the logits are (gen is a generator on that device): no per-token copy to the host.
        probs = torch.softmax(logits.float(), dim=-1)
        nxt = torch.multinomial(probs, 1, generator=gen)
        out.append(nxt)
        if step + 1 < new_tokens:
            logits = forward_cached(config, w, nxt, torch.full((b, 1), t + step, device=prompts.device), cache)
    return torch.cat(out, dim=1)


# As in src/bench/model.ts: a warm-up repetition longer than this is the figure itself (cold, so a lower bound).
MAX_REPETITION_SECONDS = 60


def seconds_per_repetition(warmup, seconds, body, sync, notes, what):
    for _ in range(warmup):
        t0 = time.perf_counter()
        body()
        sync()
        took = time.perf_counter() - t0
        if took > MAX_REPETITION_SECONDS:
            notes.append(f"{what}: one cold repetition took {took:.0f} s (over {MAX_REPETITION_SECONDS} s), so it is "
                         "the figure, unrepeated: a lower bound on throughput")
            return took
    start = time.perf_counter()
    runs = 0
    while True:
        body()
        sync()
        runs += 1
        now = time.perf_counter()
        if now - start >= seconds:
            return (now - start) / runs


def available_bytes(device):
    if device.type == "cuda":
        return torch.cuda.mem_get_info(device)[0]
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return None


def bench_shape(shape, seconds, device, results, notes, seed):
    name, config, wl = shape["name"], shape["config"], shape["workload"]
    free = available_bytes(device)
    want = {}
    for kind in ("train", "generate"):
        need = shape.get("bytes", {}).get(kind)
        want[kind] = free is None or need is None or need <= free
        if not want[kind]:
            notes.append(f"{name} {kind}: not measured: needs about {need / 2**30:.1f} GiB, "
                         f"{free / 2**30:.1f} GiB available on {device.type}")
    if not any(want.values()):
        return
    gen = torch.Generator().manual_seed(seed)
    sync = (lambda: torch.cuda.synchronize(device)) if device.type == "cuda" else (lambda: None)
    log(f"{name}: initialising {sum(math.prod(s) for s in weight_shapes(config, False).values()) / 1e6:.1f}M parameters")
    w = init_weights(config, device, gen)
    params = list(w.values())

    if want["train"]:
        ids = torch.randint(0, config["vocab_size"], (wl["trainBatch"], wl["trainSeq"]), generator=gen).to(device)
        mask = torch.ones_like(ids)
        opt = torch.optim.AdamW(params, lr=1e-6, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)

        def update():
            logits = reference.forward(config, w, ids, mask)
            logp, entropy = reference.token_log_probs(logits, ids)
            loss = -logp.mean() - 0.001 * entropy.mean()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()

        per = seconds_per_repetition(wl["warmup"], seconds, update, sync, notes, f"{name} train")
        results[f"{name} train tokens/s"] = wl["trainBatch"] * wl["trainSeq"] / per
        log(f"{name} train: {per * 1000:.1f} ms per update")
        del opt
        for p in params:
            p.grad = None

    if want["generate"]:
        # The main batch, then the extra batch sizes (a rollout's env groups x group size rows at once).
        for rows, key in [(wl["genBatch"], f"{name} generate")] + [(b, f"{name} generate b{b}") for b in wl.get("genBatches", [])]:
            prompts = torch.randint(0, config["vocab_size"], (rows, wl["promptLen"]), generator=gen).to(device)
            sample_gen = torch.Generator(device=device).manual_seed(seed)

            def call():
                with torch.no_grad():
                    out = generate(config, w, prompts, wl["newTokens"], sample_gen)
                assert out.shape == (rows, wl["newTokens"]), out.shape

            per = seconds_per_repetition(wl["warmup"], seconds, call, sync, notes, key)
            results[f"{key} tokens/s"] = rows * wl["newTokens"] / per
            log(f"{key}: {per * 1000:.1f} ms per call")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=1, help="torch.set_num_threads (default 1, as tfjs wasm/cpu in Node)")
    ap.add_argument("--device", default="cpu", help="torch device: cpu (default) or cuda")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    if args.threads < 1:
        ap.error(f"--threads must be >= 1, got {args.threads}")
    spec = json.load(sys.stdin)
    if not spec.get("shapes") and not spec.get("steps") and not spec.get("matmuls"):
        sys.exit("torch_bench: the spec on stdin has no shapes, no steps and no matmuls")
    seconds = float(spec.get("seconds", 1))
    if not seconds > 0:
        sys.exit(f"torch_bench: seconds must be > 0, got {seconds}")
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        sys.exit("torch_bench: --device cuda asked for, but torch.cuda.is_available() is False")
    torch.set_num_threads(args.threads)

    results, notes = {}, []
    for shape in spec.get("shapes", []):
        bench_shape(shape, seconds, device, results, notes, args.seed)
    if spec.get("steps"):
        from torch_step import bench_steps   # whole training steps (torch_step.py)
        bench_steps(spec, device, results, notes, args.seed)
    if spec.get("matmuls"):
        from torch_matmul import bench_matmuls   # single matrix products (torch_matmul.py)
        bench_matmuls(spec, device, results, notes, args.seed)
    json.dump({"torch": torch.__version__, "device": str(device), "threads": torch.get_num_threads(),
               "results": results, "notes": notes}, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
