#!/usr/bin/env bash
# Installs everything the project needs on a fresh Debian machine with Node >= 20.19, npm and python3:
# Debian's chromium (headless browser tests; its SwiftShader Vulkan driver also runs WebGPU through Dawn in Node),
# libvulkan1 (the Vulkan loader Dawn needs), the npm packages pinned in package-lock.json, and a Python venv with
# torch + transformers for the Hugging Face interop tests.
# Idempotent: skips what is already there.
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
# PyTorch 2.13 (CPU) and transformers (with tokenizers and safetensors) in a git-ignored virtual environment. pip
# finds them in this machine's local package index; --retries 0 stops it waiting on the unreachable public one.
# About a minute and 1.2 GB the first time; skipped when the venv already imports them. It is made while npm ci
# runs. pip byte-compiles one file at a time (52 s of the 75 s its install took alone, 2026-11-27); compileall
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
  "$HF_VENV/bin/pip" install -q --no-compile --retries 0 --timeout 5 torch==2.13.0+cpu transformers==5.18.0 2>&1 \
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
  echo "setup: creating $HF_VENV failed (see above); run scripts/setup.sh again once the cause is fixed" >&2
  exit 1
fi
