"""What the PyTorch side of `ragen bench` shares: the progress line, random Qwen2 weights and a forward pass with a KV
cache over the independent PyTorch Qwen2 of tools/parity/reference.py. torch_bench.py (the entry point),
torch_step.py and torch_matmul.py import it; it imports none of them.
"""
import math
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "parity"))
import reference  # noqa: E402  the independent PyTorch Qwen2
from make_fixtures import weight_shapes  # noqa: E402  HF weight names and shapes


def log(msg):
    sys.stderr.write(f"torch_bench: {msg}\n")
    sys.stderr.flush()


def init_weights(config, device, gen, value_head=False):
    """As Hugging Face initialises Qwen2 (and initQwen2Weights does): normal(0, 0.02), norm scales 1, biases 0.
    value_head: the critic's (a Qwen2 body with a hidden -> 1 `score` layer)."""
    w = {}
    for name, shape in weight_shapes(config, value_head).items():
        if name.endswith("norm.weight"):
            t = torch.ones(shape)
        elif name.endswith(".bias"):
            t = torch.zeros(shape)
        else:
            t = 0.02 * torch.randn(shape, generator=gen)
        w[name] = t.to(device).requires_grad_(True)
    return w


def forward_cached(config, w, ids, positions, cache):
    """reference.forward with a KV cache, for unpadded batches: ids [B, t] at `positions` [B, t]; `cache` holds
    each layer's (K, V) so far (after RoPE, before the GQA repeat) and is extended in place. Returns the logits
    of the last position [B, V]. A call of t > 1 tokens (a prefill, also of a later turn over the cached dialogue)
    is causal over its new tokens; a call of one token sees all keys."""
    b, t = ids.shape
    n_heads, n_kv = config["num_attention_heads"], config["num_key_value_heads"]
    hd = config["hidden_size"] // n_heads
    eps = config["rms_norm_eps"]
    cos, sin = reference.rope_cos_sin(positions, hd, config["rope_theta"])
    past = cache[0][0].shape[2] if cache else 0
    bias = None
    if t > 1:   # new token j sees the cached keys and the new ones up to itself (a later turn's prefill has both)
        allowed = torch.tril(torch.ones(t, past + t, dtype=torch.bool, device=ids.device), diagonal=past)
        bias = torch.zeros(t, past + t, device=ids.device).masked_fill(~allowed, torch.finfo(torch.float32).min)
    lin = torch.nn.functional.linear
    x = w["model.embed_tokens.weight"][ids]
    for i in range(config["num_hidden_layers"]):
        p = f"model.layers.{i}."
        h = reference.rms_norm(x, w[p + "input_layernorm.weight"], eps)
        q = lin(h, w[p + "self_attn.q_proj.weight"], w[p + "self_attn.q_proj.bias"]).view(b, t, n_heads, hd).transpose(1, 2)
        k = lin(h, w[p + "self_attn.k_proj.weight"], w[p + "self_attn.k_proj.bias"]).view(b, t, n_kv, hd).transpose(1, 2)
        v = lin(h, w[p + "self_attn.v_proj.weight"], w[p + "self_attn.v_proj.bias"]).view(b, t, n_kv, hd).transpose(1, 2)
        q = q * cos + reference.rotate_half(q) * sin
        k = k * cos + reference.rotate_half(k) * sin
        if len(cache) > i:
            k = torch.cat([cache[i][0], k], dim=2)
            v = torch.cat([cache[i][1], v], dim=2)
            cache[i] = (k, v)
        else:
            cache.append((k, v))
        k = reference.repeat_kv(k, n_heads // n_kv)
        v = reference.repeat_kv(v, n_heads // n_kv)
        scores = q @ k.transpose(2, 3) / math.sqrt(hd)
        if bias is not None:
            scores = scores + bias
        attn = (torch.softmax(scores, dim=-1) @ v).transpose(1, 2).reshape(b, t, n_heads * hd)
        x = x + lin(attn, w[p + "self_attn.o_proj.weight"])
        h = reference.rms_norm(x, w[p + "post_attention_layernorm.weight"], eps)
        gate = lin(h, w[p + "mlp.gate_proj.weight"])
        up = lin(h, w[p + "mlp.up_proj.weight"])
        x = x + lin(torch.nn.functional.silu(gate) * up, w[p + "mlp.down_proj.weight"])
    x = reference.rms_norm(x[:, -1], w["model.norm.weight"], eps)
    out = w["model.embed_tokens.weight"] if config["tie_word_embeddings"] else w["lm_head.weight"]
    return lin(x, out)
