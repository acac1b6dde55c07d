"""The PyTorch side of `ragen bench --only step,torch`: the work of whole StarPO training steps, redone in plain
PyTorch (no RAGEN, no veRL) with the independent Qwen2 of tools/parity/reference.py and random f32 weights, so that
its seconds stand next to the tfjs step's. torch_bench.py runs it when its stdin spec has "steps"
(src/bench/torchStep.ts writes that spec from the tfjs step's RunConfig and what each of its steps did).

Spec: {"steps": [{"name", "config" (HF Qwen2 config.json keys), "settings", "warmup": WORK, "timed": [WORK, ...]}]}
  settings: {"maxBatchSize", "temperature", "reference" (bool), "critic" (bool), "miniBatch", "microBatch",
             "epochs", "checkpointing" (bool), "actor": {"lr", "betas", "weightDecay", "gradClip", "clipLow",
             "clipHigh", "clipC", "entropyCoeff"}, "criticOptim": {"lr", "betas", "weightDecay", "gradClip",
             "cliprange"}}
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
"""
import math
import time

import torch

from torch_common import forward_cached, init_weights, log, reference


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

    def timed_part(self, fn):
        self.sync()
        t0 = time.perf_counter()
        out = fn()
        self.sync()
        return time.perf_counter() - t0, out

    def step(self, work):
        rollout_s, rollout_tokens = self.timed_part(lambda: self.rollout(work["turns"]))
        batch = self.training_batch(work["train"], work.get("trainFrom"))
        scoring_s, update_s = 0.0, 0.0
        if batch:   # the filter kept something
            scoring_s, scored = self.timed_part(lambda: self.score(batch))
            update_s, _ = self.timed_part(lambda: self.update(batch, scored))
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
            (loss() / len(losses)).backward()
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
