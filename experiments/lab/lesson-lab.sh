#!/usr/bin/env bash
# The search for a reliable lesson setting (issues 16 and 34): trains both echo-trap arms on the given training seeds
# with extra overrides, JOBS runs at a time (default 2), each at nice 10 on one worker, into OUT/seed-S/{starpo,starpo-s}.
# Resumable: a run that finished is marked OUT/seed-S-ARM.done and skipped when the script runs again; an unfinished
# one starts over (its folder is cleared first).
# Summarise with: npx tsx experiments/lab/lesson-verdict.ts OUT
#   BOTH="--set a=b ..." VANILLA="--set ..." STARPO_S="--set ..." bash experiments/lab/lesson-lab.sh OUT "0 1 2 3 4"
set -euo pipefail
out=$1; seeds=$2; jobs=${JOBS:-2}
mkdir -p "$out"
for s in $seeds; do
  for arm in starpo starpo-s; do
    [ -f "$out/seed-$s-$arm.done" ] && continue
    extra=$([ "$arm" = starpo ] && echo "${VANILLA:-}" || echo "${STARPO_S:-}")
    echo "rm -rf $out/seed-$s/$arm && nice -n 10 node bin/ragen.js train --preset echo-trap --arm $arm --seed $s --workers 1 --out $out/seed-$s ${BOTH:-} $extra > $out/seed-$s-$arm.log 2>&1 && touch $out/seed-$s-$arm.done"
  done
done | xargs -P "$jobs" -I{} bash -c '{}'
echo "$(date) done: $out" >> "$out/done.txt"
