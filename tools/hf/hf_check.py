"""Loads checkpoint directories written by this project with the real Hugging Face libraries and reports what they
see, so the tests can compare it with our TypeScript: `transformers` (AutoModelForCausalLM /
AutoModelForTokenClassification, which must resolve to Qwen2ForCausalLM / Qwen2ForTokenClassification with no missing
or unexpected weights) and `tokenizers` (AutoTokenizer over tokenizer.json + tokenizer_config.json).

Run it with the interpreter of the project's venv (scripts/setup.sh creates .venv-hf with torch 2.13 CPU and
transformers); it reads one JSON request on stdin and prints one JSON report (or a list of requests, answered in
order with a list of reports, so that torch and transformers are imported once):

    .venv-hf/bin/python tools/hf/hf_check.py < request.json

Request keys (all but "model" optional):
  model        a causal-LM checkpoint directory
  texts        strings to tokenize (no special tokens added, as our Tokenizer.encode)
  ids          token id sequences to score: per-token natural-log probabilities log p(ids[i] | ids[:i]), i >= 1,
               computed in float32 (bf16 weights are widened exactly, as our loader does)
  messages     a chat (list of {role, content}) to render with the tokenizer's chat template, generation prompt added
  critic       a value-model directory: its per-token values for each of `ids`
  bf16_of      an f32 directory whose weights, cast by torch to bfloat16, must equal `model`'s bit for bit
  save_bf16    write `model` as Hugging Face's save_pretrained does in bfloat16 (as Qwen2.5 ships) to this directory
"""
import json
import os
import sys

import torch
import transformers
from safetensors.torch import load_file
from transformers import AutoModelForCausalLM, AutoModelForTokenClassification, AutoTokenizer


def load(cls, directory, **kwargs):
    model, info = cls.from_pretrained(directory, dtype=torch.float32, output_loading_info=True, **kwargs)
    model.eval()
    problems = {k: sorted(v) for k, v in info.items() if v and k in ("missing_keys", "unexpected_keys", "mismatched_keys")}
    return model, problems


def ragen_special_tokens(tok):
    """What RAGEN's ctx_manager looks up before it can build a loss mask (spec §3.4): the turn-start and turn-end ids,
    found by text for tokenizers whose path names qwen; any other tokenizer is refused."""
    if "qwen" not in tok.name_or_path.lower():
        return {"error": f"RAGEN refuses the tokenizer at {tok.name_or_path}: its path does not contain 'qwen'"}
    return {"im_start": tok.encode("<|im_start|>")[0], "im_end": tok.encode("<|im_end|>")[0]}


def check(req):
    report = {"versions": {"torch": torch.__version__, "transformers": transformers.__version__}}
    directory = req["model"]

    tok = AutoTokenizer.from_pretrained(directory)
    report["tokenizer_class"] = type(tok).__name__
    report["tokenizer_is_fast"] = bool(tok.is_fast)
    report["token_ids"] = [tok.encode(t, add_special_tokens=False) for t in req.get("texts", [])]
    report["ragen_special_tokens"] = ragen_special_tokens(tok)
    if req.get("messages"):
        report["chat"] = tok.apply_chat_template(req["messages"], add_generation_prompt=True, tokenize=False)

    model, problems = load(AutoModelForCausalLM, directory)
    report["model_class"] = type(model).__name__
    report["load_problems"] = problems
    with open(os.path.join(directory, "config.json")) as f:
        report["torch_dtype"] = json.load(f).get("torch_dtype")
    report["weight_dtypes"] = sorted({str(t.dtype) for t in load_file(os.path.join(directory, "model.safetensors")).values()})
    log_probs = []
    with torch.no_grad():
        for ids in req.get("ids", []):
            x = torch.tensor([ids])
            logits = model(input_ids=x).logits.float()
            lp = torch.log_softmax(logits[0, :-1], dim=-1).gather(-1, x[0, 1:, None])[:, 0]
            log_probs.append(lp.tolist())
    report["log_probs"] = log_probs

    if req.get("critic"):
        critic, critic_problems = load(AutoModelForTokenClassification, req["critic"], num_labels=1)
        report["critic_class"] = type(critic).__name__
        report["critic_load_problems"] = critic_problems
        with torch.no_grad():
            report["values"] = [critic(input_ids=torch.tensor([ids])).logits[0, :, 0].tolist() for ids in req.get("ids", [])]

    if req.get("bf16_of"):
        ours = load_file(os.path.join(directory, "model.safetensors"))
        reference = load_file(os.path.join(req["bf16_of"], "model.safetensors"))
        report["bf16_mismatches"] = sorted(
            name for name, t in reference.items()
            if name not in ours or ours[name].dtype != torch.bfloat16 or not torch.equal(t.to(torch.bfloat16), ours[name])
        )
        report["bf16_tensors"] = len(reference)

    if req.get("save_bf16"):
        model.to(torch.bfloat16).save_pretrained(req["save_bf16"])
        tok.save_pretrained(req["save_bf16"])
    return report


def main():
    # One request, or a list of them answered in order: torch and transformers take seconds to import, so a test
    # with several checks asks once (a later request may read what an earlier one saved, e.g. save_bf16).
    req = json.load(sys.stdin)
    print(json.dumps([check(r) for r in req] if isinstance(req, list) else check(req)))


if __name__ == "__main__":
    main()
