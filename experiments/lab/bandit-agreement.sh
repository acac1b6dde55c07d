#!/usr/bin/env bash
# Issue 15 target 3 (Bandit reasoning agrees with the answer after RL): build a bandit-tiny warm start with recipe
# overrides, train bandit-tiny from it with run overrides, and print the 256-seed held-out scorecard of both.
#   bash experiments/lab/bandit-agreement.sh OUT "--recipe steps=400 ..." "--set actor.lr=5e-5 ..." [WARM_DIR]
# With WARM_DIR (an earlier OUT/warm) the warm start is reused instead of built.
set -euo pipefail
out=$1; recipe=${2:-}; sets=${3:-}; reuse=${4:-}
mkdir -p "$out"
if [ -n "$reuse" ]; then
  cp -r "$reuse" "$out/warm"
else
  # shellcheck disable=SC2086
  npx tsx experiments/lab/warmstart-lab.ts --preset bandit-tiny --out "$out/warm" $recipe > "$out/warm.log" 2>&1
fi
# shellcheck disable=SC2086
( time npx ragen train --preset bandit-tiny --set model.path="$PWD/$out/warm" --out "$out/rl" --workers 1 $sets ) > "$out/train.log" 2>&1
for which in warm rl; do
  npx ragen eval --checkpoint "$out/$which" --preset bandit-tiny --env Bandit --episodes 256 --quiet \
    --trajectories "$out/$which.eval.jsonl" --out "$out/$which.eval.json" 2>&1 | grep -v 'npm warn' > "$out/$which.eval.txt"
done
grep -h "held-out\|^Bandit " "$out/warm.eval.txt" "$out/rl.eval.txt"
grep real "$out/train.log"
