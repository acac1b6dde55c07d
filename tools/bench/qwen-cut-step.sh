#!/usr/bin/env bash
# One sokoban-qwen step, shrunk as tests/unit/cli/train-qwen-shape.test.ts shrinks it (LoRA, 2 env groups of one
# rollout, one turn, 8 new tokens; unlike the test, with one validation group after the step, as the measurements in
# BENCHMARKS.md were made), on a 2-layer cut of Qwen2.5-0.5B on wasm; prints the step's timing_s/* metrics, its
# actor gradient norm (to show two builds compute the same update), the whole process's seconds and the size of the
# checkpoint it wrote (MB). The cut is made by `ragen init-model`
# into MODEL_DIR the first time. Run from the repository root of the build to time:
#   bash tools/bench/qwen-cut-step.sh [MODEL_DIR, default /tmp/qwen2.5-0.5b-2layers]
set -euo pipefail
model=${1:-/tmp/qwen2.5-0.5b-2layers}
[ -f "$model/config.json" ] || node bin/ragen.js init-model --shape qwen2.5-0.5b --layers 2 --out "$model" --quiet
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
start=$(date +%s.%N)
node bin/ragen.js train --preset sokoban-qwen --set model="$model" --backend wasm --steps 1 --out "$out/run" \
  --set lora.enabled=true --set actor.lr=1e-5 --set critic.lr=1e-4 --set agent.envGroups=2 --set agent.trainEnvs.0.nGroups=2 \
  --set agent.groupSize=1 --set agent.maxTurn=1 --set rollout.maxNewTokens=8 --set actor.ppoMiniBatchSize=1 \
  --set agent.valGroups=1 --set agent.valEnvs.0.nGroups=1 --set filter.ratio=0.5 --set trainer.valBeforeTrain=false >/dev/null
process_s=$(echo "$(date +%s.%N) - $start" | bc)
node -e '
const m = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n")[0]);
console.log(Object.keys(m).filter((k) => k.startsWith("timing_s/")).map((k) => `${k.slice(9)}=${m[k].toFixed(2)}`).join(" "),
  `grad_norm=${m["actor/grad_norm"].toFixed(6)}`, `process=${Number(process.argv[2]).toFixed(1)}`, `checkpoint_mb=${process.argv[3]}`);' \
  "$out/run/metrics.jsonl" "$process_s" "$(du -sm "$out/run/checkpoints/step-1" | cut -f1)"
