// The recorded classroom lesson: the manifest the page reads, the thinning of rollouts, and the recording that ships
// in public/lessons/echo-trap/ (it must stay readable and match the lesson preset's arms).
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseMetricsJsonl, parseRolloutsJsonl } from '../../../src/metrics/jsonl';
import {
  keepFewRollouts,
  LESSON_PRESET,
  LESSON_PRESETS,
  lessonFolder,
  lessonPresetFromSearch,
  parseLessonManifest,
} from '../../../src/ui/lesson';
import { presetArms } from '../../../src/ui/settings';
import { replayEchoTrap } from '../../../src/metrics/echoTrap';
import { presetConfig } from '../../../src/starpo/presets';
import { groupByStep } from '../../../src/ui/trajectories';
import { stopStep } from '../../../src/ui/lessonRuns';

const validManifest = () => ({
  format: 1,
  preset: 'echo-trap',
  steps: 2,
  seed: 0,
  backend: 'wasm',
  workers: 2,
  rolloutsPerStep: 3,
  commit: 'abc',
  dirty: false,
  date: '2026-01-01T00:00:00Z',
  command: 'npx tsx experiments/record-lesson.ts',
  arms: [
    {
      name: 'starpo',
      metrics: 'starpo/metrics.jsonl',
      rollouts: 'starpo/rollouts.jsonl',
      steps: 2,
      trainCommand: 'ragen train',
      seconds: 3,
    },
  ],
});

describe('lesson: manifest and rollouts', () => {
  it('reads a manifest and names the field that is missing or mistyped', () => {
    expect(parseLessonManifest(validManifest()).arms[0].name).toBe('starpo');
    expect(() => parseLessonManifest({ ...validManifest(), format: 2 }, 'm.json')).toThrow(
      'm.json: format 2 is not one this page reads (1)',
    );
    expect(() => parseLessonManifest({ ...validManifest(), commit: 7 }, 'm.json')).toThrow(
      "m.json: field 'commit' should be a git commit, got 7",
    );
    expect(() => parseLessonManifest({ ...validManifest(), arms: [] }, 'm.json')).toThrow(
      "m.json: field 'arms' should be a non-empty list",
    );
    const arms = [{ ...validManifest().arms[0], steps: -1 }];
    expect(() => parseLessonManifest({ ...validManifest(), arms }, 'm.json')).toThrow(
      "m.json: arms[0]: field 'steps' should be a step count, got -1",
    );
    expect(() => parseLessonManifest([], 'm.json')).toThrow('m.json: not a JSON object');
  });

  it('keeps the first N records of each step and split, in file order', () => {
    const records = [
      { step: 0, split: 'val', i: 0 },
      { step: 0, split: 'val', i: 1 },
      { step: 0, split: 'val', i: 2 },
      { step: 1, split: 'train', i: 3 },
      { step: 1, split: 'val', i: 4 },
      { step: 1, split: 'train', i: 5 },
      { step: 1, split: 'train', i: 6 },
    ];
    expect(keepFewRollouts(records, 2).map((r) => r.i)).toEqual([0, 1, 3, 4, 5]);
    expect(keepFewRollouts(records, 1).map((r) => r.i)).toEqual([0, 3, 4]);
  });
});

describe('lesson: which lesson a URL asks for', () => {
  it('is the outcome lesson for ?lesson, a named lesson for ?lesson=NAME, and an error naming the lessons otherwise', () => {
    expect(lessonPresetFromSearch('?lesson')).toBe(LESSON_PRESET);
    expect(lessonPresetFromSearch('?lesson=&steps=3')).toBe(LESSON_PRESET);
    expect(lessonPresetFromSearch('?steps=3&lesson=echo-trap-frozenlake')).toBe('echo-trap-frozenlake');
    expect(() => lessonPresetFromSearch('?lesson=bandit-tiny')).toThrow(
      "there is no lesson 'bandit-tiny' (lessons: echo-trap, echo-trap-frozenlake)",
    );
  });

  it('every lesson is a two-arm preset, vanilla StarPO then StarPO-S', () => {
    for (const preset of LESSON_PRESETS) expect(presetArms(preset)).toEqual(['starpo', 'starpo-s']);
  });
});

describe.each(LESSON_PRESETS)('lesson: the recording of %s that ships with the site', (LESSON_PRESET) => {
  const folder = path.resolve(import.meta.dirname, '../../../public', lessonFolder(LESSON_PRESET));
  const manifest = parseLessonManifest(
    JSON.parse(fs.readFileSync(path.join(folder, 'manifest.json'), 'utf8')),
    'manifest.json',
  );

  it("records the lesson preset's arms, in its order, from a known commit and command", () => {
    expect(manifest.preset).toBe(LESSON_PRESET);
    expect(manifest.arms.map((a) => a.name)).toEqual(presetArms(LESSON_PRESET));
    expect(manifest.commit).toMatch(/^[0-9a-f]{40}$/);
    expect(manifest.command).toMatch(/^npx tsx experiments\/record-lesson\.ts /);
    expect(Number.isNaN(Date.parse(manifest.date))).toBe(false);
    // A live lesson trains the preset's own seed: the recording must be that run.
    for (const arm of manifest.arms) expect(manifest.seed).toBe(presetConfig(LESSON_PRESET, arm.name).trainer.seed);
    expect(manifest.dirty).toBe(false);
  });

  it('logged the input-dependence signal in every arm exactly when the preset measures it', () => {
    for (const arm of manifest.arms) {
      const rows = parseMetricsJsonl(fs.readFileSync(path.join(folder, arm.metrics), 'utf8'), arm.metrics);
      const measured = rows
        .filter((r) => typeof r['collapse_first_turn_sample/mi_estimate'] === 'number')
        .map((r) => r.step);
      const c = presetConfig(LESSON_PRESET, arm.name).collapse;
      expect(measured.length > 0).toBe(c.enabled);
      if (c.enabled) expect(measured.every((step) => step === 1 || step % c.computeFreq === 0)).toBe(true);
    }
  });

  it("carries today's early-warning marks: the warning on vanilla StarPO only, convergence on StarPO-S", () => {
    const marks = (rows: readonly Record<string, unknown>[]) =>
      rows.map((r) => [r.step, r['echo_trap/warning'], r['echo_trap/converged'], r['echo_trap/signal'] ?? null]);
    const firstStep = (rows: readonly Record<string, unknown>[], key: string) =>
      rows.find((r) => r[key] === 1)?.step ?? null;
    const byArm = Object.fromEntries(
      manifest.arms.map((arm) => {
        const rows = parseMetricsJsonl(fs.readFileSync(path.join(folder, arm.metrics), 'utf8'), arm.metrics);
        // What the Trainer's detector logs for these rows today (record-lesson.ts --replay-marks after a detector change).
        expect(marks(rows)).toEqual(marks(replayEchoTrap(rows, presetConfig(LESSON_PRESET, arm.name).echoTrap)));
        return [arm.name, rows];
      }),
    );
    expect(firstStep(byArm['starpo'], 'echo_trap/warning')).not.toBeNull();
    expect(firstStep(byArm['starpo-s'], 'echo_trap/warning')).toBeNull();
    expect(firstStep(byArm['starpo-s'], 'echo_trap/converged')).not.toBeNull();
  });

  it('holds every step of each run (to its last: a run stops a few steps after its collapse), and only a few readable sample trajectories per step and split', () => {
    const runs = manifest.runs ?? manifest.arms.map((a) => ({ ...a, seed: manifest.seed, collapseStep: undefined }));
    // The arms' files are their first seed's runs.
    for (const arm of manifest.arms)
      expect(runs.find((r) => r.metrics === arm.metrics)).toMatchObject({
        name: arm.name,
        seed: manifest.seed,
        steps: arm.steps,
      });
    for (const run of runs) {
      const rows = parseMetricsJsonl(fs.readFileSync(path.join(folder, run.metrics), 'utf8'), run.metrics);
      expect(rows.map((r) => r.step)).toEqual(Array.from({ length: run.steps + 1 }, (_, i) => i));
      if (run.collapseStep === undefined) expect(run.steps).toBe(manifest.steps);
      else expect(run.steps).toBe(stopStep(rows));
      const rollouts = parseRolloutsJsonl(fs.readFileSync(path.join(folder, run.rollouts), 'utf8'), run.rollouts);
      expect(keepFewRollouts(rollouts, manifest.rolloutsPerStep)).toEqual(rollouts);
      expect(groupByStep(rollouts).unreadable).toEqual([]);
      // A few kilobytes per step: the page loads the whole recording at once (60 steps were about 250 kB).
      expect(fs.statSync(path.join(folder, run.rollouts)).size).toBeLessThan(5_000 * manifest.steps);
    }
  });
});
