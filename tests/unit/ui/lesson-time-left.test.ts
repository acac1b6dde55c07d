// The live lesson's time left, replayed on the shipped recording: every run's step times, scheduled over two workers as
// the page schedules them, the page's estimate at every 10 s after the first minute against the time the replay really
// had left. (The recording's own run lengths, step times and tokens are the estimate's priors, as on the page.) The
// step times are the recording's own, or those of a computer whose steps cost differently per token trained.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseMetricsJsonl } from '../../../src/metrics/jsonl';
import { lessonFolder, parseLessonManifest } from '../../../src/ui/lesson';
import {
  armPriors,
  lessonSecondsLeft,
  profileSeconds,
  scheduleRuns,
  stepTokens,
  stopStep,
  type RunProgress,
} from '../../../src/ui/lessonRuns';

const dir = path.resolve(__dirname, '../../../public', lessonFolder('echo-trap'));
const manifest = parseLessonManifest(JSON.parse(fs.readFileSync(path.join(dir, 'manifest.json'), 'utf8')));
const files = manifest.runs ?? manifest.arms.map((a) => ({ ...a, seed: manifest.seed }));
const runs = files.map((f) => {
  const all = parseMetricsJsonl(fs.readFileSync(path.join(dir, f.metrics), 'utf8')).filter((r) => r.step >= 1);
  // A live run stops a few steps after its collapse (a recording made before runs stopped goes on: cut it there).
  const stop = stopStep(all);
  const rows = stop === null ? all : all.filter((r) => r.step <= stop);
  return {
    arm: f.name,
    seed: f.seed,
    rows,
    times: rows.map((r) => (typeof r['timing_s/step'] === 'number' ? r['timing_s/step'] : 0)),
    tokens: rows.map(stepTokens),
  };
});

/** Each run's step times on a computer where a step costs `base` seconds plus `perToken` per token trained. */
const timedAs = (base: number, perToken: number) => runs.map((r) => r.tokens.map((n) => base + perToken * n));

/** Replays the lesson on `workers` workers; returns the total and the estimate's relative error at each sample. */
function replay(workers: number, times = runs.map((r) => r.times)): { total: number; errors: number[] } {
  const priors = armPriors(runs);
  const queue = scheduleRuns(
    runs.map((r) => ({
      arm: r.arm,
      seed: r.seed,
      expectedSeconds: profileSeconds(priors[r.arm], 0, Math.round(priors[r.arm].steps)),
    })),
    workers,
  );
  // When each run starts: a free worker takes the next one.
  const free = Array(workers).fill(0);
  const start = new Map<string, number>();
  for (const q of queue) {
    const w = free.indexOf(Math.min(...free));
    const run = runs.findIndex((r) => r.arm === q.arm && r.seed === q.seed);
    start.set(`${q.arm}|${q.seed}`, free[w]);
    free[w] += times[run].reduce((a, b) => a + b, 0);
  }
  const total = Math.max(...free);
  const errors: number[] = [];
  for (let t = 60; t < total - 10; t += 10) {
    const progress: RunProgress[] = runs.map((r, j) => {
      const t0 = start.get(`${r.arm}|${r.seed}`)!;
      const mine = times[j];
      let done = 0;
      for (let s = 0, at = t0; s < mine.length && at + mine[s] <= t; at += mine[s], s++) done = s + 1;
      const rows = r.rows.slice(0, done);
      return {
        arm: r.arm,
        seed: r.seed,
        done,
        total: manifest.steps,
        over: done === r.rows.length,
        stopAt: stopStep(rows),
        stepSeconds: mine.slice(0, done),
        stepTokens: r.tokens.slice(0, done),
      };
    });
    const left = lessonSecondsLeft(progress, workers, priors);
    if (left !== null) errors.push((left - (total - t)) / (total - t));
  }
  return { total, errors };
}

describe("the live lesson's time left, replayed on the recording", () => {
  it('is within 25 % of the truth after the first minute, on 2 workers', () => {
    const { total, errors } = replay(2);
    expect(total).toBeGreaterThan(60);
    const worst = Math.max(...errors.map(Math.abs));
    expect(
      worst,
      `worst ${Math.round(worst * 100)} % over ${errors.length} samples of a ${Math.round(total)} s lesson`,
    ).toBeLessThanOrEqual(0.25);
  });
  // The recording's step times carry the load of the machine that made it; a computer whose updates cost three times
  // as much per token (or a third), and whose other work per step costs a tenth of a second, ends within 25 % too.
  for (const [label, base, perToken] of [
    ['slow updates', 0.1, 1.2e-3],
    ['fast updates', 0.1, 1.3e-4],
  ] as const)
    it(`is within 25 % of the truth after the first minute on a computer with ${label}`, () => {
      const { total, errors } = replay(2, timedAs(base, perToken));
      expect(total).toBeGreaterThan(60);
      const worst = Math.max(...errors.map(Math.abs));
      expect(worst, `worst ${Math.round(worst * 100)} % over ${errors.length} samples`).toBeLessThanOrEqual(0.25);
    });
});
