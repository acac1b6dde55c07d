"""Writes the parity fixtures that tests/unit/model/parity*.test.ts check the tfjs Qwen2 against, and the one that
tests/unit/starpo/ppo-gae-parity.test.ts checks the PPO losses and GAE against (ppo-gae.json, see build_ppo_gae).

Regenerate (needs Debian's python3-torch; nothing else, no npm):
    /usr/bin/python3 tools/parity/make_fixtures.py            # writes tests/fixtures/parity/*.json
The output is deterministic (fixed seeds, CPU float32), so rerunning should reproduce the committed files.

Each fixture is one tiny random Qwen2 checkpoint plus everything computed from it by reference.py:
  config (HF config.json keys), weights (HF names), a batch of 2 sequences (one padded) with its attention mask,
  a loss mask and advantages (or returns, for the value head), and the reference's
  logits / values, per-token log-probs and entropy (also at temperature 0.7), the loss, the gradient of the loss
  w.r.t. every weight, and the weights after 3 AdamW steps (lr 1e-2, betas 0.9/0.999, eps 1e-8, weight decay
  0.01), each step preceded by gradient clipping to global norm 1.0 (losses and pre-clip norms recorded), and
  the tokens of 8 steps of full-sequence greedy decoding from a short prompt.
Float arrays are stored as {"shape": [...], "f32": base64 of little-endian float32}: exact and 4x smaller than
decimal text. Losses:
  actor:  masked mean of (-log_prob * advantage) - 0.001 * masked mean of entropy   (RAGEN's pg + entropy bonus)
  critic: 0.5 * masked mean of (value - return)^2
"""
import base64
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ppo_reference  # noqa: E402
import reference  # noqa: E402

OUT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "fixtures", "parity")
ADAMW = dict(lr=1e-2, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)
CLIP = 1.0
ENTROPY_COEF = 0.001
STEPS = 3


def f32(t):
    t = t.detach().contiguous().to(torch.float32)
    return {"shape": list(t.shape), "f32": base64.b64encode(t.numpy().astype("<f4").tobytes()).decode("ascii")}


def write_fixture(name, fixture, summary):
    os.makedirs(OUT_DIR, exist_ok=True)
    path = os.path.join(OUT_DIR, f"{name}.json")
    with open(path, "w") as f:
        json.dump(fixture, f, separators=(",", ":"))
    print(f"{path}: {summary}, {os.path.getsize(path) // 1024} KiB")


def weight_shapes(c, value_head):
    h, hd = c["hidden_size"], c["hidden_size"] // c["num_attention_heads"]
    nh, nkv, inter = c["num_attention_heads"], c["num_key_value_heads"], c["intermediate_size"]
    s = {"model.embed_tokens.weight": (c["vocab_size"], h)}
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        s[p + "input_layernorm.weight"] = (h,)
        s[p + "self_attn.q_proj.weight"] = (nh * hd, h)
        s[p + "self_attn.q_proj.bias"] = (nh * hd,)
        s[p + "self_attn.k_proj.weight"] = (nkv * hd, h)
        s[p + "self_attn.k_proj.bias"] = (nkv * hd,)
        s[p + "self_attn.v_proj.weight"] = (nkv * hd, h)
        s[p + "self_attn.v_proj.bias"] = (nkv * hd,)
        s[p + "self_attn.o_proj.weight"] = (h, nh * hd)
        s[p + "post_attention_layernorm.weight"] = (h,)
        s[p + "mlp.gate_proj.weight"] = (inter, h)
        s[p + "mlp.up_proj.weight"] = (inter, h)
        s[p + "mlp.down_proj.weight"] = (h, inter)
    s["model.norm.weight"] = (h,)
    if value_head:
        s["score.weight"] = (1, h)
        s["score.bias"] = (1,)
    elif not c["tie_word_embeddings"]:
        s["lm_head.weight"] = (c["vocab_size"], h)
    return s


def random_weights(c, value_head, gen):
    """Larger than HF's init (std 0.02) on purpose: every norm scale and bias differs from its default and the
    logits are far from uniform, so a wrong norm, bias, RoPE or mask shows up in the numbers."""
    w = {}
    for name, shape in weight_shapes(c, value_head).items():
        if name.endswith("norm.weight"):
            t = 1.0 + 0.1 * torch.randn(shape, generator=gen)
        elif name.endswith(".bias"):
            t = 0.1 * torch.randn(shape, generator=gen)
        elif name == "model.embed_tokens.weight":
            t = 0.5 * torch.randn(shape, generator=gen)
        else:
            t = torch.randn(shape, generator=gen) / (shape[1] ** 0.5)
        w[name] = t.requires_grad_(True)
    return w


def make_batch(c, pad_side, gen, t=12, pad=4, pad_id=0):
    """Two sequences of length t; row 1 has `pad` padding tokens on `pad_side`. The loss mask covers the last 6
    real tokens of each row (the 'response'), as targets: position j scores token j+1."""
    ids = torch.randint(1, c["vocab_size"], (2, t), generator=gen)
    mask = torch.ones(2, t, dtype=torch.long)
    if pad_side == "left":
        mask[1, :pad] = 0
    else:
        mask[1, t - pad:] = 0
    ids[mask == 0] = pad_id
    loss_mask = torch.zeros(2, t - 1)
    for b in range(2):
        real = mask[b].nonzero().flatten()
        for pos in real[-6:]:
            loss_mask[b, pos - 1] = 1.0
    return ids, mask, loss_mask


def masked_mean(x, m):
    return (x * m).sum() / m.sum()


def actor_loss(c, w, ids, mask, loss_mask, adv):
    logits = reference.forward(c, w, ids, mask)
    logp, ent = reference.token_log_probs(logits, ids)
    return masked_mean(-logp * adv, loss_mask) - ENTROPY_COEF * masked_mean(ent, loss_mask)


def critic_loss(c, w, ids, mask, loss_mask, returns):
    values = reference.forward(c, w, ids, mask, value_head=True)[:, :-1]
    return 0.5 * masked_mean((values - returns) ** 2, loss_mask)


def adamw_steps(w, loss_fn):
    params = list(w.values())
    opt = torch.optim.AdamW(params, **ADAMW)
    losses, norms = [], []
    for _ in range(STEPS):
        opt.zero_grad()
        loss = loss_fn()
        loss.backward()
        norms.append(float(torch.nn.utils.clip_grad_norm_(params, CLIP)))
        losses.append(float(loss))
        opt.step()
    return losses, norms


def greedy_fixture(c, w, gen):
    """8 greedy tokens after a 5-token prompt. Tries prompts until the continuation is not one token repeated
    (a stronger test), and checks the top-2 margin so that float noise cannot flip an argmax."""
    for _ in range(50):
        prompt = torch.randint(1, c["vocab_size"], (5,), generator=gen).tolist()
        tokens = reference.greedy_generate(c, w, prompt, 8)
        if len(set(tokens)) >= 3:
            break
    else:
        raise SystemExit("no prompt gave a varied greedy continuation: pick another seed")
    ids = torch.tensor([prompt + tokens])
    logits = reference.forward(c, w, ids, torch.ones_like(ids))[0, len(prompt) - 1:-1]
    top2 = logits.topk(2, dim=-1).values
    margin = float((top2[:, 0] - top2[:, 1]).min())
    if margin < 1e-3:
        raise SystemExit(f"greedy margin {margin} too small for a token-exact test: pick another seed")
    return {"prompt": prompt, "tokens": tokens, "minMargin": margin}


def build(name, config, seed, pad_side, value_head=False):
    gen = torch.Generator().manual_seed(seed)
    w = random_weights(config, value_head, gen)
    ids, mask, loss_mask = make_batch(config, pad_side, gen)
    fixture = {
        "about": "generated by tools/parity/make_fixtures.py from tools/parity/reference.py (PyTorch "
                 f"{torch.__version__}); see that file's docstring",
        "config": config, "valueHead": value_head, "padSide": pad_side,
        "adamw": {"lr": ADAMW["lr"], "betas": list(ADAMW["betas"]), "eps": ADAMW["eps"],
                  "weightDecay": ADAMW["weight_decay"], "clipNorm": CLIP, "steps": STEPS},
        "entropyCoef": ENTROPY_COEF,
        "weights": {k: f32(v) for k, v in w.items()},
        "ids": ids.tolist(), "mask": mask.tolist(), "lossMask": f32(loss_mask),
    }
    if value_head:
        returns = torch.randn(2, ids.shape[1] - 1, generator=gen)
        fixture["returns"] = f32(returns)
        fixture["values"] = f32(reference.forward(config, w, ids, mask, value_head=True))
        loss_fn = lambda: critic_loss(config, w, ids, mask, loss_mask, returns)  # noqa: E731
    else:
        adv = torch.randn(2, ids.shape[1] - 1, generator=gen)
        fixture["advantages"] = f32(adv)
        with torch.no_grad():
            logits = reference.forward(config, w, ids, mask)
            logp, ent = reference.token_log_probs(logits, ids)
            logp07, ent07 = reference.token_log_probs(logits, ids, temperature=0.7)
        fixture.update(logits=f32(logits), logProbs=f32(logp), entropy=f32(ent),
                       logProbsT07=f32(logp07), entropyT07=f32(ent07))
        with torch.no_grad():
            fixture["greedy"] = greedy_fixture(config, w, gen)
        loss_fn = lambda: actor_loss(config, w, ids, mask, loss_mask, adv)  # noqa: E731

    loss = loss_fn()
    grads = torch.autograd.grad(loss, list(w.values()))
    fixture["loss"] = float(loss)
    fixture["grads"] = {k: f32(g) for k, g in zip(w.keys(), grads)}
    losses, norms = adamw_steps(w, loss_fn)
    fixture["stepLosses"], fixture["stepGradNorms"] = losses, norms
    fixture["weightsAfterAdamW"] = {k: f32(v) for k, v in w.items()}

    write_fixture(name, fixture, f"loss {fixture['loss']:.6f}, grad norms {[round(n, 4) for n in norms]}")


AGG_MODES = ["token-mean", "seq-mean-token-mean", "seq-mean-token-sum", "seq-mean-token-sum-norm"]
PPO = dict(clip_low=0.2, clip_high=0.28, clip_c=3.0, clip_range_value=0.5)


def ppo_mask(rows, t, gen):
    """A loss mask like a multi-turn trajectory's: two assistant turns per row with an unmasked env turn between
    them, different lengths per row, the rest padding."""
    mask = torch.zeros(rows, t)
    for b in range(rows):
        first = 1 + int(torch.randint(0, 3, (1,), generator=gen))
        length = 2 + int(torch.randint(0, 3, (1,), generator=gen))
        gap = 1 + int(torch.randint(0, 3, (1,), generator=gen))
        mask[b, first:first + length] = 1
        mask[b, first + length + gap:min(t, first + 2 * length + gap + b)] = 1
    return mask


def build_ppo_gae(name, seed, rows=4, t=16):
    """The clipped policy loss (every aggregation mode, with its gradient w.r.t. the log-probs), the clipped value loss
    (with its gradient w.r.t. the values) and GAE (two gamma/lambda settings), on random rows shaped like a batch of
    multi-turn trajectories. The old log-probs are far enough from the new ones that the upper, lower and dual clips
    all act on some tokens; no token sits within 1e-3 of a clip boundary, so float32 cannot flip a clip decision."""
    gen = torch.Generator().manual_seed(seed)
    mask = ppo_mask(rows, t, gen)
    log_prob = -torch.rand(rows, t, generator=gen) * 3
    old_log_prob = log_prob + 0.6 * torch.randn(rows, t, generator=gen)
    advantages = torch.randn(rows, t, generator=gen)
    ratio = torch.exp(log_prob - old_log_prob)
    on = mask > 0
    margin = min(float((ratio[on] - b).abs().min()) for b in (1 - PPO["clip_low"], 1 + PPO["clip_high"], PPO["clip_c"]))
    if margin < 1e-3:
        raise SystemExit(f"a ratio lies {margin} from a clip boundary: pick another seed")
    policy = {}
    for mode in AGG_MODES:
        lp = log_prob.clone().requires_grad_(True)
        loss, clipfrac, clipfrac_lower, ppo_kl = ppo_reference.policy_loss(
            lp, old_log_prob, advantages, mask, PPO["clip_low"], PPO["clip_high"], PPO["clip_c"], mode)
        (grad,) = torch.autograd.grad(loss, lp)
        policy[mode] = {"loss": float(loss), "grad": f32(grad)}
    stats = {"clipfrac": float(clipfrac), "clipfracLower": float(clipfrac_lower), "ppoKl": float(ppo_kl)}
    if not (stats["clipfrac"] > 0 and stats["clipfracLower"] > 0):
        raise SystemExit(f"the clips are not all exercised ({stats}): pick another seed")

    old_values = torch.randn(rows, t, generator=gen)
    values = (old_values + 0.8 * torch.randn(rows, t, generator=gen)).requires_grad_(True)
    returns = torch.randn(rows, t, generator=gen)
    vf_loss, vf_clipfrac = ppo_reference.value_loss(values, old_values, returns, mask, PPO["clip_range_value"])
    (vf_grad,) = torch.autograd.grad(vf_loss, values)
    if not 0 < float(vf_clipfrac) < 1:
        raise SystemExit(f"value clip fraction {float(vf_clipfrac)}: pick another seed")

    # GAE in float64 from float32 inputs (our GAE runs in float64 too): a terminal reward on each row's last loss
    # token plus a small per-token reward (as a KL penalty puts there).
    rewards = torch.where(on, -0.01 * torch.rand(rows, t, generator=gen), torch.zeros(rows, t))
    for b in range(rows):
        rewards[b, int(on[b].nonzero().max())] += float(torch.randn(1, generator=gen))
    gae_values = torch.randn(rows, t, generator=gen)
    gae_cases = []
    for gamma, lam in [(1.0, 1.0), (0.99, 0.95)]:
        adv, ret, white = ppo_reference.gae(rewards.double(), gae_values.double(), mask.double(), gamma, lam)
        gae_cases.append({"gamma": gamma, "lambda": lam, "advantages": f32(adv), "returns": f32(ret), "whitened": f32(white)})

    fixture = {
        "about": "generated by tools/parity/make_fixtures.py from tools/parity/ppo_reference.py (PyTorch "
                 f"{torch.__version__}); see that file's docstring",
        "mask": f32(mask),
        "policy": {"logProbs": f32(log_prob), "oldLogProbs": f32(old_log_prob), "advantages": f32(advantages),
                   "clipLow": PPO["clip_low"], "clipHigh": PPO["clip_high"], "clipRatioC": PPO["clip_c"],
                   **stats, "byAggMode": policy},
        "value": {"values": f32(values), "oldValues": f32(old_values), "returns": f32(returns),
                  "clipRange": PPO["clip_range_value"], "loss": float(vf_loss), "clipfrac": float(vf_clipfrac),
                  "grad": f32(vf_grad)},
        "gae": {"rewards": f32(rewards), "values": f32(gae_values), "cases": gae_cases},
    }
    write_fixture(name, fixture, f"pg_loss {policy['token-mean']['loss']:.6f}, clipfrac {stats['clipfrac']:.3f} "
                                 f"(lower {stats['clipfracLower']:.3f}), vf_loss {float(vf_loss):.6f}")


def qwen2_config(**overrides):
    c = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "vocab_size": 61, "hidden_size": 32,
         "intermediate_size": 48, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
         "max_position_embeddings": 128, "rope_theta": 10000.0, "rms_norm_eps": 1e-6, "tie_word_embeddings": True,
         "hidden_act": "silu", "torch_dtype": "float32"}
    c.update(overrides)
    return c


if __name__ == "__main__":
    torch.set_num_threads(1)
    # Main case: tied embeddings, 2 query heads per K/V head, left padding (as generation batches are).
    build("qwen2-tied", qwen2_config(), seed=1234, pad_side="left")
    # Untied LM head, 4 query heads sharing 1 K/V head, another RoPE theta and eps, right padding.
    build("qwen2-untied", qwen2_config(vocab_size=53, hidden_size=24, intermediate_size=40, num_attention_heads=4,
                                       num_key_value_heads=1, rope_theta=1e6, rms_norm_eps=1e-5,
                                       tie_word_embeddings=False), seed=99, pad_side="right")
    # Critic: the tied backbone with a value head `score` instead of the LM head.
    build("qwen2-value", qwen2_config(), seed=4321, pad_side="left", value_head=True)
    # PPO's clipped policy and value losses and GAE, without a model.
    build_ppo_gae("ppo-gae", seed=2024)
