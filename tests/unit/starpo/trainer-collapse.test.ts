// The Trainer with RAGEN-2's collapse diagnostics on (FrozenLake, the warm-started tiny policy, wasm): the metrics
// appear on schedule under RAGEN-2's keys, runs are deterministic, tensors stay flat, and a resumed run continues
// the moving average of std(marginal) exactly.
import * as path from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../../../src/model/backend';
import { readCheckpointDirFiles } from '../../../src/model/checkpointDir';
import { MemorySink } from '../../../src/metrics/sink';
import { parseRunConfig, type RunConfig, type RunConfigInput, mergeConfigInput } from '../../../src/starpo/config';
import { Trainer, type StepPhase } from '../../../src/starpo/trainer';

let policyFiles: Record<string, Uint8Array>;

beforeAll(async () => {
  await initBackend('wasm');
  policyFiles = await readCheckpointDirFiles(path.resolve('public/warmstart/frozenlake-tiny'));
});

/**
 * 2 FrozenLake groups x 2 rollouts, 2 turns, in the warm start's prompt shape (frozenlake-tiny: grid_coord, one turn
 * per prompt, single_turn samples); the filter keeps one group; diagnostics every 2 steps.
 */
function config(over: RunConfigInput = {}): RunConfig {
  const gridCoord = { observationFormat: 'grid_coord' };
  const base: RunConfigInput = {
    model: { pretrained: null, promptStyle: 'compact' },
    agent: {
      trainEnvs: [{ tag: 'FrozenLake', nGroups: 2, config: gridCoord }],
      valEnvs: [{ tag: 'FrozenLake', nGroups: 1, config: gridCoord }],
      envGroups: 2,
      groupSize: 2,
      valGroups: 1,
      maxTurn: 2,
      maxContextWindow: 1,
      contextWindowMode: 'single_turn',
    },
    rollout: { maxNewTokens: 48 },
    filter: { ratio: 0.5 },
    actor: { lr: 1e-3, ppoMiniBatchSize: 2, ppoMicroBatchSize: 2 },
    trainer: { totalSteps: 4, testFreq: 0, valBeforeTrain: false, seed: 5, backend: 'wasm', logRollouts: 0 },
    collapse: { enabled: true, computeFreq: 2, numSamples: 6, microBatchSize: 3 },
  };
  return parseRunConfig(mergeConfigInput(base, over), 'test config');
}

const withoutTiming = (row: Record<string, unknown>) =>
  Object.fromEntries(Object.entries(row).filter(([k]) => !k.startsWith('timing_s/') && k !== 'perf/throughput'));

async function run(c: RunConfig, steps: number, opts: { resumeFiles?: Record<string, Uint8Array> } = {}) {
  const sink = new MemorySink();
  const phases = new Set<StepPhase>();
  const trainer = await Trainer.create(c, {
    ...(opts.resumeFiles ? { resumeFiles: opts.resumeFiles } : { policyFiles }),
    sink,
    onProgress: (phase) => void phases.add(phase),
  });
  const tensors: number[] = [];
  for (let i = 0; i < steps; i++) {
    await trainer.step();
    tensors.push(tf.memory().numTensors);
  }
  return { trainer, sink, phases, tensors };
}

describe('Trainer: collapse diagnostics', () => {
  it("logs RAGEN-2's collapse metrics on step 1 and every computeFreq-th step, deterministically, and resumes them exactly", async () => {
    const a = await run(config(), 4);
    const rows = a.sink.rows;
    expect(rows.map((r) => r.step)).toEqual([1, 2, 3, 4]);
    const diagnosed = rows.filter((r) => 'collapse/first_turn_valid_rate' in r).map((r) => r.step);
    expect(diagnosed).toEqual([1, 2, 4]);
    for (const r of rows.filter((x) => diagnosed.includes(x.step))) {
      expect(r['collapse/first_turn_valid_rate']).toBeGreaterThan(0); // the warm start writes <think> blocks
      expect(r['collapse/valid_thinking_rate']).toBeGreaterThan(0);
      expect(r['collapse/first_turn_num_total']).toBe(4);
      // Two env groups = two first-turn prompts: MI is at most log 2.
      expect(r['collapse_first_turn_sample/mi_upper_bound']).toBeCloseTo(Math.log(2), 12);
      for (const k of [
        'mi_estimate',
        'mi_zscore_ema',
        'retrieval_accuracy',
        'conditional_entropy_est',
        'marginal_std_ema_seq',
      ]) {
        expect(Number.isFinite(r[`collapse_first_turn_sample/${k}`]), k).toBe(true);
        expect(Number.isFinite(r[`collapse_trajectory_sample/${k}`]), k).toBe(true);
      }
      expect(r['collapse_first_turn_sample/mi_estimate']).toBeLessThanOrEqual(Math.log(2) + 1e-9);
      for (const k of [
        'timing_s/collapse_metrics',
        'timing_s/collapse_first_turn_step',
        'timing_s/collapse_multi_turn_step',
      ])
        expect(r[k]).toBeGreaterThanOrEqual(0);
    }
    expect(Object.keys(rows[2]).some((k) => k.startsWith('collapse'))).toBe(false);
    // The EMA at step 4 folds in steps 1 and 2: it differs from that step's own std.
    expect(rows[3]['collapse_first_turn_sample/marginal_std_ema']).not.toBeCloseTo(
      rows[3]['collapse_first_turn_sample/marginal_std'] as number,
      8,
    );
    expect(a.phases.has('collapse')).toBe(true);
    expect(a.tensors[3]).toBe(a.tensors[1]); // step 2 and step 4 both diagnose: nothing accumulates

    // The same seed gives the same pairs and the same numbers.
    const b = await run(config(), 2);
    expect(b.sink.rows.map(withoutTiming)).toEqual(rows.slice(0, 2).map(withoutTiming));

    // Resume from the checkpoint after step 2: steps 3 and 4 as in the uninterrupted run, EMA included.
    const files = await b.trainer.checkpointFiles();
    expect(JSON.parse(new TextDecoder().decode(files['trainer_state.json'])).collapse.emaMarginalStd).toHaveProperty([
      'collapse_first_turn_sample',
    ]);
    b.trainer.dispose();
    const resumed = await run(config(), 2, { resumeFiles: files });
    expect(resumed.sink.rows.map(withoutTiming)).toEqual(rows.slice(2).map(withoutTiming));
    resumed.trainer.dispose();
    a.trainer.dispose();
  }, 300_000);

  it('writes echo_trap/signal into the metrics row (and StepResult.labels) once the warning has fired', async () => {
    const off = config({ collapse: { enabled: false } });
    const first = await run(off, 1);
    expect(first.sink.rows[0]).not.toHaveProperty(['echo_trap/signal']);
    // A checkpoint whose detector had fired at step 1 (as after a collapse): the next row carries what fired.
    const files = await first.trainer.checkpointFiles();
    first.trainer.dispose();
    const state = JSON.parse(new TextDecoder().decode(files['trainer_state.json']));
    state.echoTrap.report = {
      ...state.echoTrap.report,
      fired: true,
      firstFiredStep: 1,
      signal: 'reward_std+mi_zscore_ema',
      reason: 'test',
    };
    files['trainer_state.json'] = new TextEncoder().encode(JSON.stringify(state));
    const sink = new MemorySink();
    const trainer = await Trainer.create(off, { resumeFiles: files, sink });
    const r = await trainer.step();
    expect(r.labels).toEqual({ 'echo_trap/signal': 'reward_std+mi_zscore_ema' });
    expect(sink.rows[0]['echo_trap/warning']).toBe(1);
    expect(sink.rows[0]['echo_trap/signal']).toBe('reward_std+mi_zscore_ema');
    trainer.dispose();
  }, 120_000);

  it('costs nothing when off: no collapse key and no collapse phase', async () => {
    const off = await run(config({ collapse: { enabled: false } }), 1);
    expect(Object.keys(off.sink.rows[0]).some((k) => k.startsWith('collapse'))).toBe(false);
    expect(off.phases.has('collapse')).toBe(false);
    off.trainer.dispose();
  }, 120_000);
});
