#!/usr/bin/env bash
# The search for a reliable lesson setting (issues 16 and 34): trains the echo-trap arms (ARMS, default both) on the
# given training seeds with extra overrides, JOBS runs at a time (default 2), each at nice 10 on one worker, into
# OUT/seed-S/{starpo,starpo-s}.
# Resumable: a finished run is marked OUT/seed-S-ARM.done and skipped when the script runs again. A run being trained
# holds OUT/seed-S-ARM.lock (a folder), so two copies of the script can share one OUT without training a run twice;
# a lock left by a killed run must be removed by hand (its unfinished run then starts over).
# STOP_AFTER_COLLAPSE=K stops each vanilla run K steps after its collapse (`--set trainer.stopAfterCollapse=K`):
# the verdicts' collapse step and the MI before it are unchanged, vanilla's "final" becomes its success K steps after
# the collapse, and a check costs less (a collapsed run's steps generate the whole token budget).
# Summarise with: npx tsx experiments/lab/lesson-verdict.ts OUT
#   [PRESET=echo-trap-frozenlake] BOTH="--set a=b ..." VANILLA="--set ..." STARPO_S="--set ..." [ARMS=starpo-s] [STOP_AFTER_COLLAPSE=10] bash experiments/lab/lesson-lab.sh OUT "0 1 2 3 4"
set -euo pipefail
out=$1; seeds=$2; jobs=${JOBS:-2}; arms=${ARMS:-starpo starpo-s}
mkdir -p "$out"
for s in $seeds; do
  for arm in $arms; do
    [ -f "$out/seed-$s-$arm.done" ] && continue
    extra=$([ "$arm" = starpo ] && echo "${VANILLA:-}" || echo "${STARPO_S:-}")
    run="$out/seed-$s-$arm"
    stop=$([ "$arm" = starpo ] && [ -n "${STOP_AFTER_COLLAPSE:-}" ] && echo "--set trainer.stopAfterCollapse=$STOP_AFTER_COLLAPSE" || true)
    echo "[ -f $run.done ] || ! mkdir $run.lock 2>/dev/null || { rm -rf $out/seed-$s/$arm && nice -n 10 node bin/ragen.js train --preset ${PRESET:-echo-trap} --arm $arm --seed $s --workers 1 --out $out/seed-$s ${BOTH:-} $extra $stop > $run.log 2>&1 && touch $run.done; rmdir $run.lock; }"
  done
done | xargs -P "$jobs" -I{} bash -c '{}'
echo "$(date) done: $out" >> "$out/done.txt"
