"""An independent, plain-PyTorch Qwen2 decoder: the reference the tfjs model is checked against.

Written from the Hugging Face Qwen2 architecture description (not from our TypeScript, and not copied from
`transformers`), deliberately in the most literal form so that it can be trusted:
  - RMSNorm in float32: x * rsqrt(mean(x^2) + eps) * w
  - RoPE with inv_freq = 1 / theta^(arange(0, hd, 2) / hd), rotate_half(x) = cat(-x2, x1)
  - grouped-query attention by repeating each K/V head for its group of query heads (HF's repeat_kv)
  - SwiGLU MLP: down(silu(gate(x)) * up(x))
  - tied or untied LM head; a value head `score` (Linear H -> 1 with bias) for the critic
Positions count real tokens only (cumsum(mask) - 1, clipped at 0), as veRL does for left-padded batches.
Weights are a dict of HF names -> tensors; HF Linear computes y = x W^T + b.
"""
import math

import torch


def rms_norm(x, weight, eps):
    variance = x.pow(2).mean(dim=-1, keepdim=True)
    return x * torch.rsqrt(variance + eps) * weight


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def rope_cos_sin(positions, head_dim, theta):
    """positions [B, T] (int) -> cos, sin [B, 1, T, head_dim] in float32."""
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.int64, device=positions.device).float() / head_dim))
    angles = positions.float()[..., None] * inv_freq[None, None, :]
    emb = torch.cat((angles, angles), dim=-1)
    return emb.cos()[:, None], emb.sin()[:, None]


def repeat_kv(x, n_rep):
    """[B, nKV, T, hd] -> [B, nKV * n_rep, T, hd], each K/V head repeated for its query heads."""
    if n_rep == 1:
        return x
    b, n_kv, t, hd = x.shape
    return x[:, :, None, :, :].expand(b, n_kv, n_rep, t, hd).reshape(b, n_kv * n_rep, t, hd)


def positions_from_mask(mask):
    return (mask.long().cumsum(dim=1) - 1).clamp(min=0)


def forward(config, w, ids, mask, value_head=False, lora=None, head_from=0):
    """ids, mask [B, T] -> logits [B, T, V] (or values [B, T] with value_head); with head_from, the LM head runs on
    positions head_from.. only: logits [B, T - head_from, V].
    lora: optional (module name, input, base output) -> output, e.g. PEFT's low-rank path added to a linear layer
    (lora_reference.py); called for every linear layer of the decoder layers."""
    b, t = ids.shape

    def linear(name, x, bias=None):
        y = torch.nn.functional.linear(x, w[name + ".weight"], bias)
        return lora(name, x, y) if lora else y

    hidden = config["hidden_size"]
    n_heads = config["num_attention_heads"]
    n_kv = config["num_key_value_heads"]
    hd = hidden // n_heads
    eps = config["rms_norm_eps"]

    cos, sin = rope_cos_sin(positions_from_mask(mask), hd, config["rope_theta"])
    # Additive mask like HF's eager attention: the most negative float where a key is in the future or padding.
    allowed = torch.tril(torch.ones(t, t, dtype=torch.bool, device=mask.device))[None, None] & mask.bool()[:, None, None, :]
    bias = torch.zeros(b, 1, t, t, device=mask.device).masked_fill(~allowed, torch.finfo(torch.float32).min)

    x = w["model.embed_tokens.weight"][ids]
    for i in range(config["num_hidden_layers"]):
        p = f"model.layers.{i}."
        h = rms_norm(x, w[p + "input_layernorm.weight"], eps)
        q = linear(p + "self_attn.q_proj", h, w[p + "self_attn.q_proj.bias"])
        k = linear(p + "self_attn.k_proj", h, w[p + "self_attn.k_proj.bias"])
        v = linear(p + "self_attn.v_proj", h, w[p + "self_attn.v_proj.bias"])
        q = q.view(b, t, n_heads, hd).transpose(1, 2)
        k = k.view(b, t, n_kv, hd).transpose(1, 2)
        v = v.view(b, t, n_kv, hd).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k = repeat_kv(k, n_heads // n_kv)
        v = repeat_kv(v, n_heads // n_kv)
        scores = q @ k.transpose(2, 3) / math.sqrt(hd) + bias
        attn = torch.softmax(scores, dim=-1) @ v
        attn = attn.transpose(1, 2).reshape(b, t, n_heads * hd)
        x = x + linear(p + "self_attn.o_proj", attn)

        h = rms_norm(x, w[p + "post_attention_layernorm.weight"], eps)
        gate = linear(p + "mlp.gate_proj", h)
        up = linear(p + "mlp.up_proj", h)
        x = x + linear(p + "mlp.down_proj", torch.nn.functional.silu(gate) * up)

    x = rms_norm(x, w["model.norm.weight"], eps)
    if value_head:
        return torch.nn.functional.linear(x, w["score.weight"], w["score.bias"]).squeeze(-1)
    out = w["model.embed_tokens.weight"] if config["tie_word_embeddings"] else w["lm_head.weight"]
    return torch.nn.functional.linear(x[:, head_from:], out)


def token_log_probs(logits, ids, temperature=1.0):
    """Position t scores ids[:, t+1]: log-probs and full-softmax entropy, both [B, T-1]."""
    logp = torch.log_softmax(logits[:, :-1] / temperature, dim=-1)
    chosen = logp.gather(-1, ids[:, 1:, None]).squeeze(-1)
    entropy = -(logp.exp() * logp).sum(-1)
    return chosen, entropy


def greedy_generate(config, w, prompt, steps):
    """Full-sequence greedy decoding of one unpadded prompt (no cache): the simplest possible definition."""
    ids = list(prompt)
    for _ in range(steps):
        x = torch.tensor([ids])
        logits = forward(config, w, x, torch.ones_like(x))
        ids.append(int(logits[0, -1].argmax()))
    return ids[len(prompt):]
