// `ragen bench --only step`: one real StarPO-S training step of bandit-tiny (from its shipped warm start) on wasm,
// shrunk with --step-set to 2 env groups so the test stays short. Checks the keys, that the parts are non-negative and
// fit in the step's wall time, and that the peak memory figures are there. No timing thresholds.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { benchStepConfig, stepParts } from '../../../src/bench/step';
import { tinyPresetNames } from '../../../src/starpo/presets';

const run = promisify(execFile);
const ragen = (...args: string[]) =>
  run(process.execPath, ['bin/ragen.js', ...args], { cwd: process.cwd(), timeout: 110_000 });
const dir = mkdtempSync(path.join(os.tmpdir(), 'ragen-bench-step-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// 2 groups x 8 = 16 trajectories; the filter keeps 1 group = 8 = one mini-batch (the preset runs 8 x 8, keeps 16).
const SMALL = [
  'agent.envGroups=2',
  'agent.trainEnvs.0.nGroups=2',
  'filter.ratio=0.5',
  'actor.ppoMiniBatchSize=8',
  'actor.ppoMicroBatchSize=8',
].flatMap((kv) => ['--step-set', kv]);

describe('bench step config', () => {
  it('accepts the one-arm tiny presets only, and switches validation and early stopping off', () => {
    expect(tinyPresetNames()).toEqual(expect.arrayContaining(['bandit-tiny', 'frozenlake-tiny', 'sokoban-tiny']));
    expect(tinyPresetNames()).not.toContain('echo-trap');
    expect(tinyPresetNames()).not.toContain('sokoban-qwen');
    const c = benchStepConfig('bandit-tiny', {
      backend: 'wasm',
      repeats: 3,
      overrides: ['trainer.testFreq=5', 'rollout.maxNewTokens=32'],
    });
    expect(c.trainer.testFreq).toBe(0);
    expect(c.trainer.valBeforeTrain).toBe(false);
    expect(c.earlyStop.enabled).toBe(false);
    expect(c.trainer.totalSteps).toBe(4);
    expect(c.rollout.maxNewTokens).toBe(32);
  });

  it("splits a step's timing metrics into rollout / scoring / update; missing parts count 0", () => {
    expect(
      stepParts({
        'timing_s/gen': 1,
        'timing_s/old_log_prob': 0.25,
        'timing_s/ref': 0.125,
        'timing_s/adv': 0.5,
        'timing_s/update_actor': 2,
        'timing_s/update_critic': 0.75,
        'timing_s/step': 5,
      }),
    ).toEqual({ rollout: 1, scoring: 0.875, update: 2.75 });
    expect(stepParts({ 'timing_s/gen': 1, 'actor/pg_loss': NaN, 'timing_s/step': 1.5 })).toEqual({
      rollout: 1,
      scoring: 0,
      update: 0,
    });
  });
});

describe('ragen bench --only step', () => {
  it('runs a real bandit-tiny step on wasm and reports its split and peak memory', async () => {
    const file = path.join(dir, 'step.json');
    const { stdout } = await ragen(
      'bench',
      '--only',
      'step',
      '--presets',
      'bandit-tiny',
      '--step-repeats',
      '1',
      '--backend',
      'wasm',
      ...SMALL,
      '--json',
      file,
    );
    const report = JSON.parse(readFileSync(file, 'utf8'));
    const r = report.results.step as Record<string, number>;
    const p = 'bandit-tiny';
    expect(Object.keys(r).sort()).toEqual(
      ['step s', 'rollout s', 'scoring s', 'update s', 'other s', 'peak bytes', 'peak tensors']
        .map((k) => `${p} ${k}`)
        .sort(),
    );
    for (const v of Object.values(r)) expect(Number.isFinite(v) && v >= 0).toBe(true);
    const parts = r[`${p} rollout s`] + r[`${p} scoring s`] + r[`${p} update s`];
    expect(r[`${p} step s`]).toBeGreaterThan(0);
    expect(parts).toBeLessThanOrEqual(r[`${p} step s`] + 1e-6);
    // other = step - parts, so the four add up to the step.
    expect(parts + r[`${p} other s`]).toBeCloseTo(r[`${p} step s`], 6);
    // Every part really ran: the rollout generated, the filter kept a group, so scoring and the update ran too.
    expect(r[`${p} rollout s`]).toBeGreaterThan(0);
    expect(r[`${p} scoring s`]).toBeGreaterThan(0);
    expect(r[`${p} update s`]).toBeGreaterThan(0);
    expect(r[`${p} peak bytes`]).toBeGreaterThan(0);
    expect(Number.isInteger(r[`${p} peak tensors`]) && r[`${p} peak tensors`] > 0).toBe(true);
    expect(report.backend).toBe('wasm');
    expect(report.errors).toEqual({});
    expect(report.command).toContain('--only step');
    expect(stdout).toMatch(/bandit-tiny: 2 env groups x 8 = 16 trajectories per step/);
  });

  it('refuses a multi-arm preset, a bad --step-set key or bad --step-repeats with exit code 2, before any work', async () => {
    await expect(ragen('bench', '--only', 'step', '--presets', 'echo-trap')).rejects.toMatchObject({
      code: 2,
      stderr: expect.stringContaining("unknown step preset 'echo-trap'"),
    });
    await expect(
      ragen('bench', '--only', 'step', '--presets', 'bandit-tiny', '--step-set', 'agent.nope=1'),
    ).rejects.toMatchObject({ code: 2, stderr: expect.stringContaining("unknown config key 'agent.nope'") });
    await expect(ragen('bench', '--only', 'step', '--step-repeats', '0')).rejects.toMatchObject({
      code: 2,
      stderr: expect.stringContaining('--step-repeats must be an integer >= 1'),
    });
  });
});
