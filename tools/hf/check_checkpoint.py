"""Checks, from Python, that a checkpoint directory written by this project is what Hugging Face expects.

`transformers` cannot be installed here (no PyPI), so this checks the format structurally and numerically with
code independent of our TypeScript:
  - model.safetensors is read by a small reader written from the safetensors format description (8-byte LE header
    length, JSON header, raw little-endian data), requiring what the Rust `safetensors` crate requires: contiguous
    offsets covering the data, byte lengths matching dtype x shape, and __metadata__ {"format": "pt"} (transformers
    refuses other formats);
  - config.json must carry what transformers' Qwen2Config / AutoModelForCausalLM need, and the tensors must be
    exactly the parameter names and shapes of Qwen2ForCausalLM (or Qwen2ForTokenClassification) for that config;
  - tokenizer.json must have the fields the Rust `tokenizers` deserializer reads;
  - optionally, the per-token log-probs of a token sequence under tools/parity/reference.py (a plain PyTorch Qwen2).

Usage (Debian's python3 has torch):
    /usr/bin/python3 tools/hf/check_checkpoint.py DIR [--ids 1,2,3]      # prints a JSON report, exit 1 on problems
    /usr/bin/python3 tools/hf/check_checkpoint.py DIR --to-bf16 OUT      # writes OUT as Hugging Face ships Qwen2.5:
                                                                         # bf16 weights, torch_dtype "bfloat16"
"""
import argparse
import json
import os
import shutil
import struct
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "parity"))
import reference  # noqa: E402

DTYPES = {"F32": (torch.float32, 4), "BF16": (torch.bfloat16, 2), "F16": (torch.float16, 2)}


def read_safetensors(path):
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + n].decode("utf-8"))
    data = raw[8 + n :]
    metadata = header.pop("__metadata__", None)
    tensors = {}
    end = 0
    for name, info in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0]):
        begin, stop = info["data_offsets"]
        assert begin == end, f"{name}: offsets not contiguous ({begin} != {end})"
        dtype, size = DTYPES[info["dtype"]]
        count = 1
        for d in info["shape"]:
            count *= d
        assert stop - begin == count * size, f"{name}: {stop - begin} bytes for {count} x {info['dtype']}"
        buf = bytearray(data[begin:stop])
        t = torch.frombuffer(buf, dtype=dtype) if count else torch.empty(0, dtype=dtype)
        tensors[name] = t.reshape(info["shape"])
        end = stop
    assert end == len(data), f"{len(data) - end} bytes after the last tensor"
    return tensors, metadata


def write_safetensors(path, tensors, metadata):
    header = {"__metadata__": metadata} if metadata else {}
    blobs, offset = [], 0
    for name in sorted(tensors):
        t = tensors[name].contiguous()
        b = t.view(torch.int16).numpy().tobytes() if t.dtype == torch.bfloat16 else t.numpy().tobytes()
        dtype = {torch.bfloat16: "BF16", torch.float32: "F32", torch.float16: "F16"}[t.dtype]
        header[name] = {"dtype": dtype, "shape": list(t.shape), "data_offsets": [offset, offset + len(b)]}
        blobs.append(b)
        offset += len(b)
    h = json.dumps(header).encode("utf-8")
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def expected_shapes(c, value_head):
    h, nh, nkv, inter, v = (c["hidden_size"], c["num_attention_heads"], c["num_key_value_heads"],
                            c["intermediate_size"], c["vocab_size"])
    hd = h // nh
    s = {"model.embed_tokens.weight": [v, h], "model.norm.weight": [h]}
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        s.update({
            p + "input_layernorm.weight": [h], p + "post_attention_layernorm.weight": [h],
            p + "self_attn.q_proj.weight": [nh * hd, h], p + "self_attn.q_proj.bias": [nh * hd],
            p + "self_attn.k_proj.weight": [nkv * hd, h], p + "self_attn.k_proj.bias": [nkv * hd],
            p + "self_attn.v_proj.weight": [nkv * hd, h], p + "self_attn.v_proj.bias": [nkv * hd],
            p + "self_attn.o_proj.weight": [h, nh * hd],
            p + "mlp.gate_proj.weight": [inter, h], p + "mlp.up_proj.weight": [inter, h],
            p + "mlp.down_proj.weight": [h, inter],
        })
    if value_head:
        s["score.weight"], s["score.bias"] = [1, h], [1]
    elif not c.get("tie_word_embeddings", False):  # HF Qwen2Config defaults to untied
        s["lm_head.weight"] = [v, h]
    return s


def check(directory, ids):
    problems = []
    with open(os.path.join(directory, "config.json")) as f:
        config = json.load(f)
    for key, want in [("model_type", "qwen2"), ("hidden_act", "silu")]:
        if config.get(key) != want:
            problems.append(f"config.json {key} is {config.get(key)!r}, expected {want!r}")
    arch = config.get("architectures") or []
    if arch not in (["Qwen2ForCausalLM"], ["Qwen2ForTokenClassification"]):
        problems.append(f"config.json architectures {arch!r}")
    for key in ["vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
                "num_key_value_heads", "max_position_embeddings", "rope_theta", "rms_norm_eps",
                "tie_word_embeddings", "torch_dtype"]:
        if key not in config:
            problems.append(f"config.json lacks {key}")
    value_head = arch == ["Qwen2ForTokenClassification"]

    tensors, metadata = read_safetensors(os.path.join(directory, "model.safetensors"))
    if not metadata or metadata.get("format") not in ("pt", "tf", "flax", "mlx"):
        problems.append(f"model.safetensors __metadata__ {metadata!r}: transformers needs format 'pt'")
    want = expected_shapes(config, value_head)
    for name, shape in want.items():
        if name not in tensors:
            problems.append(f"missing tensor {name}")
        elif list(tensors[name].shape) != shape:
            problems.append(f"{name} has shape {list(tensors[name].shape)}, Qwen2 needs {shape}")
    for name in tensors:
        if name not in want:
            problems.append(f"unexpected tensor {name}")

    with open(os.path.join(directory, "tokenizer.json")) as f:
        tok = json.load(f)
    for key in ["version", "truncation", "padding", "added_tokens", "normalizer", "pre_tokenizer", "post_processor",
                "decoder", "model"]:
        if key not in tok:
            problems.append(f"tokenizer.json lacks {key}")
    vocab = tok["model"]["vocab"]
    size = max(list(vocab.values()) + [a["id"] for a in tok["added_tokens"]]) + 1
    if size > config["vocab_size"]:
        problems.append(f"tokenizer has {size} ids > vocab_size {config['vocab_size']}")
    for merge in tok["model"]["merges"]:
        a, b = merge.split(" ") if isinstance(merge, str) else merge
        if a + b not in vocab:
            problems.append(f"merge {merge!r} makes a token missing from the vocab")
            break

    report = {"ok": not problems, "problems": problems, "tensors": len(tensors),
              "dtypes": sorted({str(t.dtype) for t in tensors.values()})}
    if ids and not problems and not value_head:
        w = {k: t.to(torch.float32) for k, t in tensors.items()}
        x = torch.tensor([ids])
        with torch.no_grad():
            logits = reference.forward(config, w, x, torch.ones_like(x))
            chosen, _ = reference.token_log_probs(logits, x)
        report["log_probs"] = chosen[0].tolist()
    return report


def to_bf16(directory, out):
    """Copies a checkpoint with bf16 weights (round-to-nearest-even, as torch casts) and torch_dtype bfloat16."""
    os.makedirs(out, exist_ok=True)
    for name in os.listdir(directory):
        if name not in ("model.safetensors", "config.json"):
            shutil.copy(os.path.join(directory, name), os.path.join(out, name))
    tensors, metadata = read_safetensors(os.path.join(directory, "model.safetensors"))
    write_safetensors(os.path.join(out, "model.safetensors"),
                      {k: t.to(torch.bfloat16) for k, t in tensors.items()}, metadata or {"format": "pt"})
    with open(os.path.join(directory, "config.json")) as f:
        config = json.load(f)
    config["torch_dtype"] = "bfloat16"
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=2, sort_keys=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--ids", default="", help="comma-separated token ids to score with the PyTorch reference")
    ap.add_argument("--to-bf16", default=None, help="write a bf16 copy of the checkpoint to this directory")
    args = ap.parse_args()
    if args.to_bf16:
        to_bf16(args.dir, args.to_bf16)
        print(json.dumps({"ok": True, "written": args.to_bf16}))
        return
    ids = [int(s) for s in args.ids.split(",") if s.strip()]
    report = check(args.dir, ids)
    print(json.dumps(report))
    sys.exit(0 if report["ok"] else 1)


if __name__ == "__main__":
    main()
