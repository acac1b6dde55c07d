#!/usr/bin/env bash
# Issue 16's search for a reliable lesson setting: trains both echo-trap arms on the given training seeds with extra
# overrides, two runs at a time, into OUT/seed-S/{starpo,starpo-s}; a finished run (metrics of every step) is kept.
# Summarise with: npx tsx experiments/lab/lesson-verdict.ts OUT
#   BOTH="--set a=b ..." VANILLA="--set ..." STARPO_S="--set ..." bash experiments/lab/lesson-lab.sh OUT "0 1 2 3 4"
set -euo pipefail
out=$1; seeds=$2; jobs=${JOBS:-2}
mkdir -p "$out"
for s in $seeds; do
  for arm in starpo starpo-s; do
    extra=$([ "$arm" = starpo ] && echo "${VANILLA:-}" || echo "${STARPO_S:-}")
    echo "node bin/ragen.js train --preset echo-trap --arm $arm --seed $s --workers 1 --out $out/seed-$s ${BOTH:-} $extra > $out/seed-$s-$arm.log 2>&1"
  done
done | xargs -P "$jobs" -I{} bash -c '{}'
echo "$(date) done: $out" >> "$out/done.txt"
