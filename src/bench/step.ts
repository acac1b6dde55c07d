// One full StarPO-S training step of a tiny preset (or of sokoban-qwen from a given checkpoint), for
// `ragen bench --only step`. Measures and returns; says what it ran through `note`, never prints. With the torch
// section too, each step's work is recorded in tokens for the PyTorch side (torchStep.ts).
//
// The step is the real one: the preset's resolved config, the Trainer built as `ragen train` builds it (from the
// preset's warm-start checkpoint in public/warmstart/<preset>/), metrics into an in-memory sink (no files written).
// Validation is switched off (trainer.testFreq = 0, valBeforeTrain = false) and so is early stopping, so every
// measured step is rollout + update only. One untimed warm-up step runs first (under tf.profile, for the peak
// memory), then `repeats` timed steps; each figure is the mean over the timed steps.
//
// Wall time of a step, split with the trainer's own `timing_s/...` metrics:
//   rollout = timing_s/gen                    env groups x group size trajectories, sampled with the KV cache
//   scoring = timing_s/old_log_prob           actor log-probs of the training sequences (no gradient)
//           + timing_s/ref                    reference log-probs (only when a KL term is on)
//           + timing_s/adv                    critic values (one critic forward pass, PPO/GAE) + GAE + whitening;
//                                             the GAE and whitening loops are plain JS over a few thousand floats
//   update  = timing_s/update_actor + timing_s/update_critic    PPO epochs x mini-batches, backward + AdamW
//             (with a helper thread, --workers 2, the critic's run alongside the actor's: the longer of the two)
//   other   = step - the three above: tokenising, the uncertainty filter, reasoning metrics, the sink
// A part the step did not run (no reference model, no critic, the filter kept nothing) counts 0.
import * as tf from '@tensorflow/tfjs';
import { initBackend, type BackendName } from '../model/backend';
import { webGpuMatMul } from '../model/webgpuMatMulRoute';
import { MemorySink } from '../metrics/sink';
import { applyOverrides, type RunConfig } from '../starpo/config';
import { presetConfig, tinyPresetNames } from '../starpo/presets';
import { readCheckpointFiles } from '../model/checkpointDir';
import { Trainer } from '../starpo/trainer';
import type { HelperApi } from '../starpo/helper';
import { addPeak, describePeak, measurePeakMemory } from './model';
import { StepWorkRecorder, stepWorkResults, type StepRunWork, type StepWork } from './torchStep';

/** The presets the step section runs: the tiny ones, from their shipped warm starts, and RAGEN's paper configuration
 *  sokoban-qwen, from a checkpoint given with `--step-set model=DIR` (e.g. `ragen init-model`'s). */
export function stepPresetNames(): string[] {
  return [...tinyPresetNames(), 'sokoban-qwen'];
}

/** The presets the step section runs by default. */
export const DEFAULT_STEP_PRESETS = ['bandit-tiny', 'frozenlake-tiny'] as const;

/** A preset's config as the step section runs it: `overrides` (`--step-set`), then the bench's own settings. */
export function benchStepConfig(
  preset: string,
  opts: { backend: BackendName; repeats: number; overrides?: readonly string[] },
): RunConfig {
  const user = applyOverrides(presetConfig(preset), opts.overrides ?? []);
  return applyOverrides(user, [
    `trainer.totalSteps=${1 + opts.repeats}`, // the warm-up plus the timed steps: the run never "finishes" early
    'trainer.testFreq=0', // no validation inside a measured step
    'trainer.valBeforeTrain=false',
    'earlyStop.enabled=false',
    `trainer.backend=${opts.backend}`,
  ]);
}

/** The Trainer's helper running elsewhere (a worker thread), and how to end it. */
export interface StepHelper {
  api: HelperApi;
  terminate(): Promise<void>;
}

export interface BenchStepOptions {
  /** tfjs backend (initialised here; an unavailable backend is an error). */
  backend: BackendName;
  /** Preset names from stepPresetNames() (default: bandit-tiny, frozenlake-tiny). */
  presets?: readonly string[];
  /** Timed steps after the warm-up (default 2). */
  repeats?: number;
  /** `key=value` config overrides laid over every preset (e.g. fewer env groups for a quick check). */
  overrides?: readonly string[];
  /** Receives one line per preset: what a step did and its peak memory. */
  note?: (line: string) => void;
  /** Where a preset's initial policy lives (`ragen train` resolves it the same way); throws when it is missing. */
  modelDir: (config: RunConfig) => string;
  /** A helper for the preset's steps, as `ragen train --workers` would have one (a second core), or null. */
  helperFor: (config: RunConfig, backend: BackendName) => StepHelper | null;
  /** When given, each preset's steps are recorded in tokens (torchStep.ts) and handed over here, and its
   *  results gain "<preset> rollout tokens" / "<preset> train tokens" (means per timed step): the PyTorch step's work. */
  onWork?: (run: StepRunWork) => void;
}

/**
 * Seconds per training step and its parts, and the warm-up step's peak tensor memory, for each preset: keys
 * "<preset> step s", "<preset> rollout s", "<preset> scoring s", "<preset> update s", "<preset> other s",
 * "<preset> peak bytes", "<preset> peak tensors".
 */
export async function benchStep(opts: BenchStepOptions): Promise<Record<string, number>> {
  const presets = opts.presets ?? DEFAULT_STEP_PRESETS;
  const repeats = opts.repeats ?? 2;
  if (!Number.isInteger(repeats) || repeats < 1)
    throw new Error(`benchStep: repeats must be an integer >= 1, got ${repeats}`);
  if (!presets.length) throw new Error('benchStep: no presets given');
  const allowed = stepPresetNames();
  for (const p of presets) {
    if (!allowed.includes(p))
      throw new Error(`benchStep: unknown step preset '${p}' (expected: ${allowed.join(', ')})`);
  }
  const note = opts.note ?? (() => {});
  // Resolve every config and warm start before any work, so a bad override or a missing checkpoint fails at once.
  const runs = presets.map((preset) => {
    const config = benchStepConfig(preset, { backend: opts.backend, repeats, overrides: opts.overrides });
    return { preset, config, modelDir: opts.modelDir(config) };
  });
  const backend = await initBackend(opts.backend);
  note(
    `tfjs ${tf.version.tfjs} on ${backend.name}${backend.name === 'webgpu' ? ` (${backend.adapter}; matmul: ${webGpuMatMul()})` : ', one thread'}; ` +
      `1 warm-up step (profiled) + ${repeats} timed, validation off`,
  );

  const results: Record<string, number> = {};
  for (const { preset, config, modelDir } of runs) {
    const helper = opts.helperFor(config, backend.name);
    const recorder = opts.onWork ? new StepWorkRecorder(config.rollout.maxNewTokens) : undefined;
    const trainer = await Trainer.create(config, {
      policyFiles: readCheckpointFiles(modelDir),
      sink: new MemorySink(),
      log: (line) => note(`${preset}: ${line}`),
      helper: helper?.api,
      workloadProbe: recorder,
    }).catch(async (err) => {
      await helper?.terminate();
      throw err;
    });
    if (helper) note(`${preset}: 2 cores (a helper thread: half of each rollout batch, the critic)`);
    try {
      const peak = await measurePeakMemory(async () => {
        await trainer.step();
      });
      const warmupWork = recorder?.take(trainer.tokenizer);
      const timedWork: StepWork[] = [];
      const sums = { step: 0, rollout: 0, scoring: 0, update: 0, other: 0 };
      const kept: number[] = [];
      for (let i = 0; i < repeats; i++) {
        const t0 = performance.now();
        const { metrics: m } = await trainer.step();
        const wall = (performance.now() - t0) / 1000;
        const parts = stepParts(m, helper !== null);
        sums.step += wall;
        sums.rollout += parts.rollout;
        sums.scoring += parts.scoring;
        sums.update += parts.update;
        sums.other += Math.max(0, wall - parts.rollout - parts.scoring - parts.update);
        kept.push(m['train/batch_size'] ?? 0);
        if (recorder) timedWork.push(recorder.take(trainer.tokenizer));
      }
      for (const [part, sum] of Object.entries(sums)) results[`${preset} ${part} s`] = sum / repeats;
      addPeak(results, preset, peak);
      if (opts.onWork && warmupWork) {
        const run: StepRunWork = {
          preset,
          config,
          model: trainer.actor.config,
          reference: trainer.ref !== null,
          critic: trainer.critic !== null,
          warmup: warmupWork,
          timed: timedWork,
        };
        Object.assign(results, stepWorkResults(run));
        opts.onWork(run);
      }
      const a = config.agent;
      note(
        `${preset}: ${a.envGroups} env groups x ${a.groupSize} = ${a.envGroups * a.groupSize} trajectories per step, ` +
          `${kept.join(' / ')} kept by the filter; ${results[`${preset} step s`].toFixed(2)} s per step; warm-up step: ${describePeak(peak)}`,
      );
    } finally {
      trainer.dispose();
      await helper?.terminate();
    }
  }
  return results;
}

/**
 * A step's metrics as rollout / scoring / update seconds (a part the step did not run counts 0). With a helper
 * (`parallel`) the critic's updates run while the actor's do, so the update takes the longer of the two.
 */
export function stepParts(
  m: Readonly<Record<string, number>>,
  parallel = false,
): { rollout: number; scoring: number; update: number } {
  const s = (key: string) => (Number.isFinite(m[key]) ? m[key] : 0);
  const [actor, critic] = [s('timing_s/update_actor'), s('timing_s/update_critic')];
  return {
    rollout: s('timing_s/gen'),
    scoring: s('timing_s/old_log_prob') + s('timing_s/ref') + s('timing_s/adv'),
    update: parallel ? Math.max(actor, critic) : actor + critic,
  };
}
