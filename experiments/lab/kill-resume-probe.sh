#!/bin/bash
# Issue 31 item 6: does `ragen train --resume` after `kill -9` at an arbitrary moment (rollout, update, checkpoint
# write) reproduce the uninterrupted run at every later step? Trains bandit-tiny (wasm) once without interruption,
# then KILLS times: start, kill -9 after a random delay, resume (repeatedly, until finished), and compares
# metrics.jsonl (timing keys left out), rollouts.jsonl and the final checkpoint's weights with the reference.
# Kill moments are uniform over the uninterrupted run's wall time; a run killed before its first checkpoint starts
# over (marked "(restart)"). Output: one line per kill sequence, "identical" or the rows and keys that differ.
#   usage: [SAVE=trainer.saveFreq] [TEST=trainer.testFreq] experiments/lab/kill-resume-probe.sh WORKERS [KILLS] [STEPS]
#   (defaults SAVE=2 TEST=3; runs go to runs/kill-probe-wWORKERS/, so run one probe per WORKERS at a time)
set -u
W=${1:-1}; KILLS=${2:-6}; STEPS=${3:-8}
ROOT=runs/kill-probe-w$W; rm -rf $ROOT; mkdir -p $ROOT
ARGS=(--preset bandit-tiny --steps $STEPS --backend wasm --workers $W --set trainer.saveFreq=${SAVE:-2} --set trainer.testFreq=${TEST:-3})
T0=$(date +%s.%N)
node bin/ragen.js train "${ARGS[@]}" --out $ROOT/ref > $ROOT/ref.log 2>&1 || { echo "reference run failed"; exit 1; }
T=$(node -e "console.log($(date +%s.%N) - $T0)")   # kill delays: uniform over the length of one whole run
strip() { node -e '
  const fs=require("fs"); for (const l of fs.readFileSync(process.argv[1],"utf8").split("\n").filter(Boolean)) {
    const r=JSON.parse(l); for (const k of Object.keys(r)) if (/^timing|^perf\/(time|throughput)/.test(k)) delete r[k]; console.log(JSON.stringify(r)); }' "$1"; }
strip $ROOT/ref/metrics.jsonl > $ROOT/ref.metrics
for i in $(seq 1 $KILLS); do
  D=$ROOT/k$i; first=1; kills=""
  while :; do
    if [ $first = 1 ]; then node bin/ragen.js train "${ARGS[@]}" --out $D > $D.log 2>&1 & else node bin/ragen.js train "${ARGS[@]}" --out $D --resume >> $D.log 2>&1 & fi
    pid=$!; delay=$(node -e "console.log((Math.random()*$T).toFixed(2))")
    sleep $delay
    if kill -0 $pid 2>/dev/null; then kill -9 $pid; wait $pid 2>/dev/null; kills="$kills ${delay}s"
      if [ ! -d $D/checkpoints ] || [ -z "$(ls $D/checkpoints | grep '^step-')" ]; then rm -rf $D; first=1; kills="$kills(restart)"; continue; fi
      first=0
    else wait $pid; rc=$?; [ $rc = 0 ] && break; echo "k$i: exit $rc"; tail -3 $D.log; break; fi
  done
  strip $D/metrics.jsonl > $D.metrics
  if cmp -s $ROOT/ref.metrics $D.metrics && cmp -s $ROOT/ref/rollouts.jsonl $D/rollouts.jsonl && cmp -s $ROOT/ref/checkpoints/step-$STEPS/model.safetensors $D/checkpoints/step-$STEPS/model.safetensors; then
    echo "k$i (killed at$kills): identical"
  else
    echo "k$i (killed at$kills): DIFFERS"; node -e '
      const fs=require("fs"); const a=fs.readFileSync(process.argv[1],"utf8").trim().split("\n"), b=fs.readFileSync(process.argv[2],"utf8").trim().split("\n");
      for (let i=0;i<Math.max(a.length,b.length);i++) if (a[i]!==b[i]) { const x=JSON.parse(a[i]??"{}"), y=JSON.parse(b[i]??"{}");
        const ks=[...new Set([...Object.keys(x),...Object.keys(y)])].filter(k=>x[k]!==y[k]); console.log(`  row ${i} (step ${x.step}/${y.step}): ${ks.length} keys differ, e.g. ${ks.slice(0,4).map(k=>k+" "+x[k]+" vs "+y[k]).join("; ")}`); }' $ROOT/ref.metrics $D.metrics
    cmp -s $ROOT/ref/rollouts.jsonl $D/rollouts.jsonl || echo "  rollouts.jsonl differs"
  fi
done
