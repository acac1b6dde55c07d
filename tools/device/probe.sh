#!/usr/bin/env bash
# One-off measurements on the GPU server (see BENCHMARKS.md): webgpu-probe.ts, then whether several training
# processes can share the GPU (the experiments run that way), then the quiet-machine wasm vs PyTorch-CPU rows.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
source tools/device/unpack.sh
icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json; [ -f "$icd" ] && export VK_DRIVER_FILES=$icd
timeout 150 node --import tsx tools/device/webgpu-probe.ts tiny 2>&1 | grep -v XDG | tee "$OUT/probe.log"
for n in 1 8; do
  start=$(date +%s%N)
  for i in $(seq $n); do
    timeout 120 node bin/ragen.js train --preset bandit-tiny --backend webgpu --steps 3 --set trainer.testFreq=0 \
      --seed $i --out /tmp/par-$n-$i > "/tmp/par-$n-$i.log" 2>&1 &
  done
  wait
  echo "$n parallel webgpu bandit-tiny runs x 3 steps: $(( ($(date +%s%N) - start) / 1000000 )) ms wall; finished: $(grep -l 'echo trap warning' /tmp/par-$n-*.log | wc -l)/$n" | tee -a "$OUT/probe.log"
done
timeout 200 node bin/ragen.js bench --only model,torch --backend wasm --shapes tiny,sokoban-tiny --python python3 \
  --json "$OUT/bench-wasm.json" 2>&1 | tee "$OUT/bench-wasm.log"
