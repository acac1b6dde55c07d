#!/usr/bin/env bash
# Installs everything the project needs on a fresh Debian machine with Node >= 20.19, npm and python3:
# Debian's chromium (headless browser tests; its SwiftShader Vulkan driver also runs WebGPU through Dawn in Node),
# libvulkan1 (the Vulkan loader Dawn needs), the npm packages pinned in package-lock.json, and a Python venv with
# torch + transformers for the Hugging Face interop tests.
# Idempotent: skips what is already there. Only the tests use the Python venv, so when it cannot be made the script
# says so and still exits 0 (the main job, `npx ragen train`, needs only the npm packages); under CI (CI=true, set by
# .ci/run) that failure is fatal, because the tests that follow need the venv.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
[ -x /usr/bin/chromium ] || need+=(chromium)
ldconfig -p 2>/dev/null | grep -q 'libvulkan.so.1' || need+=(libvulkan1)
if [ ${#need[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${need[*]}"
  sudo_cmd=""; [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${need[@]}" >/dev/null
fi

# Hugging Face's own libraries for the interop tests (tools/hf/hf_check.py, tests/unit/model/hf-interop.test.ts):
# PyTorch 2.13 (CPU) and transformers (with tokenizers and safetensors) in a git-ignored virtual environment.
# `torch==2.13.0` has no local label, so it matches both PyPI's build and PyTorch's CPU build `2.13.0+cpu` (PEP 440),
# and pip takes the CPU build wherever one is offered, as the higher version: from PyTorch's CPU index on an ordinary
# machine, from the local wheels on a machine that has them (pip's own configuration). --retries 0 and --timeout 5
# stop pip waiting on an index the machine cannot reach. About a minute and 1.2 GB the first time; skipped when the
# venv already imports them. It is made while npm ci runs. pip byte-compiles one file at a time (52 s of the 75 s its install took alone, 2026-11-27); compileall
# writes the same .pyc files on every core (31 s), which every later `import torch` reads.
HF_VENV=.venv-hf
make_hf_venv() {
  if ! python3 -m venv --help >/dev/null 2>&1; then
    echo "setup: installing Debian packages: python3 python3-venv"
    sudo_cmd=""; [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
    $sudo_cmd apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq python3 python3-venv >/dev/null
  fi
  echo "setup: creating $HF_VENV (torch 2.13 CPU + transformers 5.18)"
  rm -rf "$HF_VENV"
  python3 -m venv "$HF_VENV"
  "$HF_VENV/bin/pip" install -q --no-compile --retries 0 --timeout 5 \
    --extra-index-url https://download.pytorch.org/whl/cpu torch==2.13.0 transformers==5.18.0 2>&1 \
    | grep -v -e 'Retrying' -e 'NewConnectionError' -e 'is ignored: it is neither' || true
  "$HF_VENV/bin/python" -m compileall -q -j 0 "$HF_VENV"/lib/python3*/site-packages >/dev/null || true
  "$HF_VENV/bin/python" -c 'import torch, transformers, tokenizers, safetensors'
}
venv_pid=""
if ! "$HF_VENV/bin/python" -c 'import torch, transformers, tokenizers, safetensors' 2>/dev/null; then
  make_hf_venv &
  venv_pid=$!
fi

if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "setup: npm ci"
  npm ci --no-audit --no-fund --loglevel=error
fi

if [ -n "$venv_pid" ] && ! wait "$venv_pid"; then
  rm -rf "$HF_VENV"   # a half-made venv would pass for a made one; the tests then say it is missing
  echo "setup: could not create $HF_VENV, the Python venv with torch + transformers (pip's output is above)." >&2
  echo "setup: only the tests need it (npm test: the Hugging Face interop tests); npx ragen train and the" >&2
  echo "setup: playground run without it. Once the cause is fixed (network, disk, python3-venv), retry with" >&2
  echo "setup:   bash scripts/setup.sh" >&2
  if [ "${CI:-}" = true ]; then exit 1; fi
fi
