#!/usr/bin/env bash
# Trains a share of experiments/ on the GPU server (webgpu, many runs at once on the one GPU), then packs the run
# directories (without rollouts.jsonl) into $OUT so they can be resumed / summarised elsewhere.
# Usage: bash tools/device/experiments.sh REGEX MINUTES [BACKEND]   (wasm: one run per core; webgpu runs share the GPU)
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
source tools/device/unpack.sh
icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json; [ -f "$icd" ] && export VK_DRIVER_FILES=$icd
node --import tsx experiments/all.ts --match "$1" --train-only --backend "${3:-wasm}" --jobs 16 --minutes "$2" 2>&1 | tee "$OUT/train.log"
cd runs/experiments
for group in bandit frozenlake sokoban; do  # split: one file back is at most 16 MB
  dirs=$(ls -d ${group}-* 2>/dev/null) || continue
  tar --exclude=rollouts.jsonl -czf - $dirs | split -b 15M - "$OUT/$group.tgz."
done
ls -la "$OUT"
