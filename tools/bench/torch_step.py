"""The PyTorch side of `ragen bench --only step,torch`: the work of whole StarPO training steps, redone in plain
PyTorch (no RAGEN, no veRL) with the independent Qwen2 of tools/parity/reference.py and random f32 weights, so that
its seconds stand next to the tfjs step's. torch_bench.py runs it when its stdin spec has "steps"
(src/bench/torchStep.ts writes that spec from the tfjs step's RunConfig and what each of its steps did).

Spec: {"steps": [{"name", "config" (HF Qwen2 config.json keys), "settings", "warmup": WORK, "timed": [WORK, ...]}]}
  settings: {"maxBatchSize", "temperature", "reference" (bool), "critic" (bool), "miniBatch", "microBatch",
             "epochs", "checkpointing" (bool), "actor": {"lr", "betas", "weightDecay", "gradClip", "clipLow",
             "clipHigh", "clipC", "entropyCoeff"}, "criticOptim": {"lr", "betas", "weightDecay", "gradClip",
             "cliprange"}, "dtype" (optional: "f32", the default, or "bf16": every part under bf16 autocast over the
             f32 weights, as RAGEN trains, FSDP's mixed precision, and generates, vLLM's bf16)}
  WORK (one tfjs step, in tokens): {"turns": [{"rows", "prefill", "decode", "fresh"}], "train": [length, ...],
         "trainFrom": [first loss target, ...]}
The warm-up WORK runs untimed; each timed WORK once. Results, per step name (means over the timed WORKs):
  "<name> step s", "<name> rollout s", "<name> scoring s", "<name> update s", "<name> other s",
  "<name> rollout tokens" (rows x (prefill + decode) summed over the turns) and "<name> train tokens" (the trained
  sequences' lengths summed): the counts of what this side really ran, to check against what the tfjs side did.

One step, as the tfjs Trainer runs it (src/starpo/trainer.ts):
  rollout = rows generated in batches of at most maxBatchSize, each batch keeping its KV cache across turns: turn t
            prefills `prefill` new tokens per row (its prompt, or what it adds to the cached dialogue; `fresh`: into
            an empty cache, the history window having dropped turns), then
            samples `decode` tokens one at a time at `temperature` (no stop token: the tfjs batch also decodes until
            its longest row stops). Rows that finished their episode leave the batch. No shared-prefix prefill:
            every row prefills its own prompt, as the tfjs side does.
  scoring = the actor's old log-probs (no gradient; the LM head from the micro-batch's first loss target on, as on
            the tfjs side), the reference's when `reference`, the critic's values when
            `critic`, in micro-batches of microBatch sequences (padded to the longest of the micro-batch); then a
            stand-in for GAE and whitening (a few element-wise ops). Always scored first, as veRL does (the tfjs side
            may take them from the update's forward pass instead: its scoring then counts 0).
  update  = epochs x mini-batches of miniBatch sequences, each micro-batches of microBatch with gradients
            accumulated: the critic's clipped value loss, then the actor's PPO loss (dual clip, token-mean, minus
            entropyCoeff x entropy), backward (recomputing the forward when `checkpointing`), clip_grad_norm_,
            AdamW. The critic's update runs before the actor's, as in the Trainer without a helper thread.

Run alone, it times the paper's step (tools/device/full-run.sh, section torch-paper):
    python tools/bench/torch_step.py --paper [--device cuda] [--dtype bf16,f32] [--train-tokens N] [--json FILE]
    python tools/bench/torch_step.py --paper --tiny        # the same plumbing at tiny sizes, on CPU in seconds
See paper_spec() for the work and main() for the results' keys.
"""
import argparse
import contextlib
import json
import sys
import time

import torch

sys.dont_write_bytecode = True  # run alone: no __pycache__ left in tools/bench or tools/parity
from torch_common import forward_cached, init_weights, log, reference  # noqa: E402


def bench_steps(spec, device, results, notes, seed):
    for step in spec["steps"]:
        StepRunner(step, device, seed).run(results, notes)


class StepRunner:
    def __init__(self, step, device, seed):
        self.name, self.config, self.s = step["name"], step["config"], step["settings"]
        self.warmup, self.timed = step["warmup"], step["timed"]
        self.device = device
        self.gen = torch.Generator().manual_seed(seed)
        self.sample_gen = torch.Generator(device=device).manual_seed(seed)
        self.sync = (lambda: torch.cuda.synchronize(device)) if device.type == "cuda" else (lambda: None)
        log(f"{self.name}: actor{', reference' if self.s['reference'] else ''}{', critic' if self.s['critic'] else ''}, "
            f"{len(self.timed)} timed step(s) after 1 warm-up")
        self.actor = init_weights(self.config, device, self.gen)
        self.ref = {k: v.detach().clone() for k, v in self.actor.items()} if self.s["reference"] else None
        self.critic = init_weights(self.config, device, self.gen, value_head=True) if self.s["critic"] else None
        self.actor_opt = adamw(self.actor, self.s["actor"])
        self.critic_opt = adamw(self.critic, self.s["criticOptim"]) if self.critic else None

    def run(self, results, notes):
        self.step(self.warmup)
        sums = {"step": 0.0, "rollout": 0.0, "scoring": 0.0, "update": 0.0, "other": 0.0,
                "rollout tokens": 0, "train tokens": 0}
        for work in self.timed:
            t0 = time.perf_counter()
            parts, tokens = self.step(work)
            wall = time.perf_counter() - t0
            sums["step"] += wall
            for k, v in parts.items():
                sums[k] += v
            sums["other"] += max(0.0, wall - sum(parts.values()))
            sums["rollout tokens"] += tokens["rollout"]
            sums["train tokens"] += tokens["train"]
        n = len(self.timed)
        for k, v in sums.items():
            results[f"{self.name} {k}{'' if k.endswith('tokens') else ' s'}"] = v / n
        log(f"{self.name}: {sums['step'] / n:.2f} s per step")

    def timed_part(self, fn, autocast=True):
        self.sync()
        t0 = time.perf_counter()
        with self.autocast() if autocast else contextlib.nullcontext():
            out = fn()
        self.sync()
        return time.perf_counter() - t0, out

    def autocast(self):
        """bf16: the part's matmuls in bf16 over the f32 weights (each weight cast once per part: autocast caches the
        casts of leaf tensors), reductions and the loss in f32; f32: no autocast."""
        dtype = self.s.get("dtype", "f32")
        if dtype == "f32":
            return contextlib.nullcontext()
        if dtype != "bf16":
            raise ValueError(f"dtype must be f32 or bf16, got {dtype!r}")
        return torch.autocast(device_type=self.device.type, dtype=torch.bfloat16)

    def step(self, work):
        rollout_s, rollout_tokens = self.timed_part(lambda: self.rollout(work["turns"]))
        batch = self.training_batch(work["train"], work.get("trainFrom"))
        scoring_s, update_s = 0.0, 0.0
        if batch:   # the filter kept something
            scoring_s, scored = self.timed_part(lambda: self.score(batch))
            update_s, _ = self.timed_part(lambda: self.update(batch, scored), autocast=False)   # autocast inside
        parts = {"rollout": rollout_s, "scoring": scoring_s, "update": update_s}
        return parts, {"rollout": rollout_tokens, "train": sum(work["train"])}

    # --- rollout ------------------------------------------------------------------------------------------------
    def rollout(self, turns):
        """Batches of at most maxBatchSize rows, fixed at turn 1 (as policyGenerateFn); returns the tokens run."""
        first = turns[0]["rows"] if turns else 0
        size = self.s["maxBatchSize"]
        tokens = 0
        with torch.no_grad():
            for start in range(0, first, size):
                cache, position = [], 0
                for turn in turns:
                    rows = min(turn["rows"], start + size) - start   # the active rows of this batch
                    if rows <= 0:
                        break
                    if turn["fresh"]:
                        cache, position = [], 0
                    else:
                        cache = [(k[:rows], v[:rows]) for k, v in cache]
                    position = self.turn(cache, rows, position, turn["prefill"], turn["decode"])
                    tokens += rows * (turn["prefill"] + turn["decode"])
        return tokens

    def turn(self, cache, rows, position, prefill, decode):
        vocab = self.config["vocab_size"]
        ids = torch.randint(0, vocab, (rows, prefill), generator=self.gen).to(self.device)
        pos = torch.arange(position, position + prefill, device=self.device).expand(rows, prefill)
        logits = forward_cached(self.config, self.actor, ids, pos, cache)
        position += prefill
        for i in range(decode):
            probs = torch.softmax(logits.float() / self.s["temperature"], dim=-1)
            nxt = torch.multinomial(probs, 1, generator=self.sample_gen)
            if i + 1 < decode:   # the last sampled token (the end of the turn) comes in the next turn's prefill
                logits = forward_cached(self.config, self.actor, nxt, torch.full((rows, 1), position, device=self.device), cache)
                position += 1
        return position

    # --- scoring ------------------------------------------------------------------------------------------------
    def training_batch(self, lengths, froms=None):
        """Random token ids of the given lengths, as micro-batches: (ids, mask, head_from) padded to the micro-batch's
        longest; head_from is the smallest first loss target of its sequences, where its log-prob passes start the LM
        head (as the tfjs side's PaddedBatch.firstLossTarget)."""
        vocab, micro = self.config["vocab_size"], self.s["microBatch"]
        froms = froms or [0] * len(lengths)
        out = []
        for start in range(0, len(lengths), micro):
            part = lengths[start:start + micro]
            head_from = max(0, min(min(froms[start:start + micro]), max(part) - 2))
            ids = torch.zeros(len(part), max(part), dtype=torch.long)
            mask = torch.zeros_like(ids)
            for row, n in enumerate(part):
                ids[row, :n] = torch.randint(0, vocab, (n,), generator=self.gen)
                mask[row, :n] = 1
            out.append((ids.to(self.device), mask.to(self.device), head_from))
        return out

    def score(self, batch):
        with torch.no_grad():
            old = [self.log_probs(self.actor, *micro)[0] for micro in batch]
            if self.ref is not None:
                [self.log_probs(self.ref, *micro) for micro in batch]
            values = [reference.forward(self.config, self.critic, ids, mask, value_head=True)[:, :-1]
                      for ids, mask, _ in batch] if self.critic else None
            # Stand-in for GAE + whitening: the returns (one per position the critic scores) and the advantages (one
            # per position the actor's log-probs cover, from the micro-batch's head_from on).
            returns = [torch.ones_like(v) for v in values] if values else None
            adv = [(r - v)[:, f:] for r, v, (_, _, f) in zip(returns, values, batch)] if values else [torch.ones_like(o) for o in old]
            flat = torch.cat([a.flatten() for a in adv])
            adv = [(a - flat.mean()) / (flat.std() + 1e-8) for a in adv]
        return {"old": old, "values": values, "returns": returns, "adv": adv}

    def log_probs(self, w, ids, mask, head_from):
        logits = reference.forward(self.config, w, ids, mask, head_from=head_from)
        return reference.token_log_probs(logits, ids[:, head_from:], self.s["temperature"])

    # --- update -------------------------------------------------------------------------------------------------
    def update(self, batch, scored):
        micro_per_mini = max(1, self.s["miniBatch"] // self.s["microBatch"])
        minis = [list(range(i, min(i + micro_per_mini, len(batch)))) for i in range(0, len(batch), micro_per_mini)]
        for _ in range(self.s["epochs"]):
            for mini in minis:
                if self.critic:
                    self.optimizer_step(self.critic, self.critic_opt, self.s["criticOptim"]["gradClip"],
                                        [lambda i=i: self.critic_loss(batch[i], scored, i) for i in mini])
                self.optimizer_step(self.actor, self.actor_opt, self.s["actor"]["gradClip"],
                                    [lambda i=i: self.actor_loss(batch[i], scored, i) for i in mini])

    def optimizer_step(self, w, opt, clip, losses):
        opt.zero_grad(set_to_none=True)
        for loss in losses:
            with self.autocast():   # the forward and the loss; the backward outside, as autocast wants it
                value = loss() / len(losses)
            value.backward()
        torch.nn.utils.clip_grad_norm_(list(w.values()), clip)
        opt.step()

    def forward(self, w, ids, mask, value_head=False, head_from=0):
        if self.s["checkpointing"]:   # one more forward in the backward pass, as per-layer checkpointing costs
            return torch.utils.checkpoint.checkpoint(reference.forward, self.config, w, ids, mask, value_head, None, head_from,
                                                     use_reentrant=False)
        return reference.forward(self.config, w, ids, mask, value_head=value_head, head_from=head_from)

    def actor_loss(self, micro, scored, i):
        ids, mask, f = micro
        a = self.s["actor"]
        logp, entropy = reference.token_log_probs(self.forward(self.actor, ids, mask, head_from=f), ids[:, f:], self.s["temperature"])
        m = mask[:, f + 1:].float()
        ratio = torch.exp(logp - scored["old"][i])
        adv = scored["adv"][i]
        pg = torch.maximum(-adv * ratio, -adv * ratio.clamp(1 - a["clipLow"], 1 + a["clipHigh"]))
        pg = torch.where(adv < 0, torch.minimum(pg, -adv * a["clipC"]), pg)   # dual clip
        return ((pg - a["entropyCoeff"] * entropy) * m).sum() / m.sum().clamp(min=1)

    def critic_loss(self, micro, scored, i):
        ids, mask, _ = micro
        values = self.forward(self.critic, ids, mask, value_head=True)[:, :-1]
        old, ret, c = scored["values"][i], scored["returns"][i], self.s["criticOptim"]["cliprange"]
        clipped = old + (values - old).clamp(-c, c)
        m = mask[:, 1:].float()
        loss = 0.5 * torch.maximum((values - ret) ** 2, (clipped - ret) ** 2)
        return (loss * m).sum() / m.sum().clamp(min=1)


def adamw(w, o):
    return torch.optim.AdamW(list(w.values()), lr=o["lr"], betas=tuple(o["betas"]), eps=1e-8, weight_decay=o["weightDecay"])


# --- run alone: the paper's step (tools/device/full-run.sh, section torch-paper) ---------------------------------

# Qwen2.5-0.5B's config.json (src/model/qwenShapes.ts), the keys the reference model reads.
QWEN25_05B = dict(vocab_size=151936, hidden_size=896, intermediate_size=4864, num_hidden_layers=24, num_attention_heads=14,
                  num_key_value_heads=2, max_position_embeddings=32768, rope_theta=1000000.0, rms_norm_eps=1e-6,
                  tie_word_embeddings=True)
# --tiny: the tiny presets' model sizes (config defaults' model.tiny, vocabulary 512 as src/bench/model.ts assumes).
TINY = dict(vocab_size=512, hidden_size=64, intermediate_size=192, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, max_position_embeddings=1024, rope_theta=10000.0, rms_norm_eps=1e-6,
            tie_word_embeddings=True)
# RAGEN's paper configuration (src/starpo/config/defaults.ts, sokoban-qwen's gradient checkpointing): PPO with a
# critic, no reference model (no KL), mini-batches of 32 trajectories in micro-batches of 1, one epoch.
PAPER_SETTINGS = {
    "maxBatchSize": 128, "temperature": 1.0, "reference": False, "critic": True, "miniBatch": 32, "microBatch": 1,
    "epochs": 1, "checkpointing": True,
    "actor": {"lr": 1e-6, "betas": [0.9, 0.999], "weightDecay": 0.01, "gradClip": 1.0, "clipLow": 0.2, "clipHigh": 0.28,
              "clipC": 3.0, "entropyCoeff": 0.001},
    "criticOptim": {"lr": 1e-5, "betas": [0.9, 0.999], "weightDecay": 0.01, "gradClip": 1.0, "cliprange": 0.5},
}
# The paper step's work as the 2026-11-28 H100 step did it (BENCHMARKS.md, docs/gpu-runs/2026-11-28-7996b2a.json): a
# random model writes no valid action, so all 8 x 16 dialogues play their 5 turns of 400 new tokens (the most a step
# can cost), and the filter keeps 2 env groups: 32 trajectories, 87,128 tokens trained.
PAPER_WORK = {"rows": 128, "turns": 5, "decode": 400, "trainSequences": 32, "trainTokens": 87128}
TINY_WORK = {"rows": 8, "turns": 2, "decode": 8, "trainSequences": 2, "trainTokens": 80}


def paper_spec(work, config, settings):
    """One "steps" entry (see the docstring) for the paper step's work: `rows` dialogues generated together, `turns`
    turns each decoding `decode` tokens; each dialogue as long as a trained sequence, its prompt tokens (the total less
    the decoded ones) spread evenly over the turns' prefills; `trainSequences` sequences of `trainTokens` in all
    (lengths differing by at most 1), each from the first response token on. The warm-up is one short turn at the same
    batch and one short sequence: the kernels and the allocator, not the work."""
    seqs, tokens = work["trainSequences"], work["trainTokens"]
    lengths = [tokens // seqs + (1 if i < tokens % seqs else 0) for i in range(seqs)]
    prefill = max(1, round((tokens / seqs - work["turns"] * work["decode"]) / work["turns"]))
    turns = [{"rows": work["rows"], "prefill": prefill, "decode": work["decode"], "fresh": False}] * work["turns"]
    warmup = {"turns": [{"rows": work["rows"], "prefill": 16, "decode": 4, "fresh": False}], "train": [64], "trainFrom": [16]}
    return {"name": "paper", "config": config, "settings": dict(settings, maxBatchSize=max(settings["maxBatchSize"], work["rows"])),
            "warmup": warmup, "timed": [{"turns": turns, "train": lengths, "trainFrom": [prefill] * seqs}]}


def repeat_for(seconds, body, sync):
    """Seconds per call of body: one untimed call, then calls until `seconds` have passed (at least one)."""
    body()
    sync()
    start, runs = time.perf_counter(), 0
    while True:
        body()
        sync()
        runs += 1
        if time.perf_counter() - start >= seconds:
            return (time.perf_counter() - start) / runs


def train_tokens_per_second(runner, tokens, seconds):
    """`ragen bench`'s train row (src/bench/model.ts, torch_bench.py) at 1 x tokens: forward, log-probs and entropy,
    loss = -mean(log-prob) - 0.001 mean(entropy), backward, clip_grad_norm_(1.0), AdamW; no checkpointing."""
    ids = torch.randint(0, runner.config["vocab_size"], (1, tokens), generator=runner.gen).to(runner.device)
    mask = torch.ones_like(ids)
    params = list(runner.actor.values())

    def update():
        with runner.autocast():
            logp, entropy = reference.token_log_probs(reference.forward(runner.config, runner.actor, ids, mask), ids)
            loss = -logp.float().mean() - 0.001 * entropy.float().mean()
        runner.actor_opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        runner.actor_opt.step()

    return tokens / repeat_for(seconds, update, runner.sync)


def generate_tokens_per_second(runner, rows, seconds, prompt=32, new=16):
    """`ragen bench`'s generate row at batch `rows`: `rows` prompts of 32 tokens, 16 new tokens each, KV cache,
    sampled at temperature 1 (the rollout's turn() with an empty cache is exactly that call)."""
    def call():
        with torch.no_grad(), runner.autocast():
            runner.turn([], rows, 0, prompt, new)

    return rows * new / repeat_for(seconds, call, runner.sync)


def main():
    ap = argparse.ArgumentParser(description="The paper's StarPO step (and an update at 1 x 1,536 tokens, and generation "
                                             "at batch 128) in plain PyTorch, in bf16 autocast and in f32.")
    ap.add_argument("--paper", action="store_true", required=True, help="time the paper's step (the only mode run alone)")
    ap.add_argument("--tiny", action="store_true", help="tiny model and work: the plumbing, on CPU in seconds")
    ap.add_argument("--device", default="cpu", help="torch device: cpu (default) or cuda")
    ap.add_argument("--dtype", default="bf16,f32", help="comma-separated, run in this order: bf16 (autocast), f32")
    ap.add_argument("--train-tokens", type=int, help="tokens trained in the step (default: the 2026-11-28 paper step's 87,128)")
    ap.add_argument("--train-sequences", type=int, help="trajectories trained (default 32: the filter keeps 2 of 8 env groups)")
    ap.add_argument("--seconds", type=float, default=1.0, help="least time timing the update and generate rows")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", help="write the results here (after each dtype, so a run cut short keeps what it measured)")
    args = ap.parse_args()
    dtypes = [d.strip() for d in args.dtype.split(",") if d.strip()]
    if not dtypes or any(d not in ("bf16", "f32") for d in dtypes):
        ap.error(f"--dtype must list bf16 and/or f32, got {args.dtype!r}")
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        sys.exit("torch_step: --device cuda asked for, but torch.cuda.is_available() is False")
    work = dict(TINY_WORK if args.tiny else PAPER_WORK)
    if args.train_tokens:
        work["trainTokens"] = args.train_tokens
    if args.train_sequences:
        work["trainSequences"] = args.train_sequences
    if work["trainTokens"] / work["trainSequences"] <= work["turns"] * work["decode"]:
        ap.error(f"{work['trainTokens']} tokens in {work['trainSequences']} sequences leave no prompt beside "
                 f"{work['turns']} turns of {work['decode']} new tokens")
    settings = dict(PAPER_SETTINGS, maxBatchSize=work["rows"], miniBatch=min(PAPER_SETTINGS["miniBatch"], work["trainSequences"]))
    spec = paper_spec(work, TINY if args.tiny else QWEN25_05B, settings)
    train_len, gen_rows = (64, 2) if args.tiny else (1536, 128)
    out = {"torch": torch.__version__, "device": str(device), "threads": torch.get_num_threads(), "work": work,
           "results": {}, "notes": []}

    def write():
        if args.json:
            with open(args.json, "w") as f:
                json.dump(out, f, indent=1)
                f.write("\n")

    runner = StepRunner(spec, device, args.seed)
    for dtype in dtypes:
        runner.s = dict(runner.s, dtype=dtype)
        runner.name = f"paper {dtype}"
        runner.run(out["results"], out["notes"])
        write()
        out["results"][f"train 1x{train_len} {dtype} tokens/s"] = train_tokens_per_second(runner, train_len, args.seconds)
        out["results"][f"generate b{gen_rows} {dtype} tokens/s"] = generate_tokens_per_second(runner, gen_rows, args.seconds)
        log(f"{dtype}: train 1x{train_len} {out['results'][f'train 1x{train_len} {dtype} tokens/s']:.0f} tokens/s, "
            f"generate b{gen_rows} {out['results'][f'generate b{gen_rows} {dtype} tokens/s']:.0f} tokens/s")
        write()
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
