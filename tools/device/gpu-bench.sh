#!/usr/bin/env bash
# The GPU rows of BENCHMARKS.md: run on an offline NVIDIA server after tools/device/pack.sh (runtime) and with
# Debian's libvulkan1 .deb in .gl/ (apt-get download libvulkan1). Writes logs and JSON to $OUT (default ./bench-out).
# Usage: bash tools/device/gpu-bench.sh [sections...]   sections: webgpu wasm train (default: all three)
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
PY=${PY:-python3}  # the interpreter with torch (CUDA) on the server
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
source tools/device/unpack.sh
icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[ -f "$icd" ] && export VK_DRIVER_FILES=$icd
python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.cuda.is_available())"
sections=${*:-webgpu wasm train}
for s in $sections; do
  case $s in
    webgpu) # Node + Dawn on the GPU against PyTorch CUDA on the same GPU.
      timeout 400 node bin/ragen.js bench --only model,torch --backend webgpu --torch-device cuda --python "$PY" \
        --shapes tiny,sokoban-tiny,qwen0.5b --json "$OUT/bench-webgpu.json" 2>&1 | tee "$OUT/bench-webgpu.log" ;;
    wasm) # The CPU rows on a quiet 16-core machine: wasm (one thread) against PyTorch with one thread.
      timeout 300 node bin/ragen.js bench --only envs,model,torch --backend wasm --shapes tiny,sokoban-tiny --python "$PY" \
        --json "$OUT/bench-wasm.json" 2>&1 | tee "$OUT/bench-wasm.log" ;;
    train) # Wall time of real training steps on the GPU (Dawn) and on wasm, same preset and seed.
      for b in webgpu wasm; do
        rm -rf "/tmp/bt-$b"
        ( time timeout 240 node bin/ragen.js train --preset bandit-tiny --backend $b --steps 4 --set trainer.testFreq=0 \
            --out "/tmp/bt-$b" ) 2>&1 | tail -n 8 | tee "$OUT/train-$b.log"
      done ;;
    *) echo "unknown section $s" ;;
  esac
done
