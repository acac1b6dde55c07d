#!/usr/bin/env bash
# stop-after-steps.sh METRICS N COMMAND...: runs COMMAND (a `ragen train`) and stops it once METRICS (its
# metrics.jsonl) holds N lines, that is, once its N-th step is on record; exits 0 then, else with COMMAND's own code.
# full-run.sh's train section runs through it: a step's metrics line is written when the step ends, and what
# `ragen train` does next, writing the final checkpoint (11.9 GB for sokoban-qwen, actor, critic and their AdamW
# moments), is time the record does not need (FULL_RUN_CHECKPOINT=1 keeps it).
metrics=$1 steps=$2
shift 2
"$@" &
pid=$!
trap 'kill "$pid" 2>/dev/null' TERM INT
while kill -0 "$pid" 2>/dev/null; do
  if [ -f "$metrics" ] && [ "$(wc -l < "$metrics")" -ge "$steps" ]; then
    echo "stop-after-steps: $steps step(s) in $metrics; stopping before the final checkpoint"
    kill "$pid" 2>/dev/null
    wait "$pid"
    exit 0
  fi
  sleep 1
done
wait "$pid"
