// experiments/record-lesson.ts, the one way to make the recorded classroom lesson: it trains every arm of the preset
// with `ragen train`, ships metrics and a few rollouts per step with a manifest, and replaces an earlier recording
// only when every arm trained, keeping the fresh-seed table beside it.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { recordLesson, replayLessonMarks } from '../../../experiments/record-lesson';
import { parseMetricsJsonl, parseRolloutsJsonl } from '../../../src/metrics/jsonl';
import { parseLessonManifest } from '../../../src/ui/lesson';

const dirs: string[] = [];
const tmp = () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'record-lesson-'));
  dirs.push(dir);
  return dir;
};
afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

describe('record-lesson', () => {
  it('trains both echo-trap arms and writes their metrics, a few rollouts per step and split, and the manifest', async () => {
    const root = tmp();
    const out = path.join(root, 'lesson');
    // An earlier recording, with the fresh-seed table the lab scripts write beside it.
    fs.mkdirSync(path.join(out, 'starpo'), { recursive: true });
    fs.writeFileSync(path.join(out, 'starpo', 'metrics.jsonl'), 'old\n');
    fs.writeFileSync(path.join(out, 'manifest.json'), '{"old": true}\n');
    fs.writeFileSync(path.join(out, 'fresh-seeds.json'), '{"the table": 1}\n');
    const lines: string[] = [];
    const manifest = await recordLesson(
      {
        preset: 'echo-trap',
        steps: 1,
        seed: 3,
        seedsPerArm: 2,
        backend: 'wasm',
        workers: 1,
        rolloutsPerStep: 2,
        out,
        runs: path.join(root, 'runs'),
      },
      'the command',
      (line) => lines.push(line),
    );
    expect(manifest.arms.map((a) => a.name)).toEqual(['starpo', 'starpo-s']);
    // Every run: seeds 3 and 4 of each arm, the first seed's where a one-seed recording keeps them.
    expect(manifest.runs!.map((r) => [r.name, r.seed, r.metrics])).toEqual([
      ['starpo', 3, 'starpo/metrics.jsonl'],
      ['starpo-s', 3, 'starpo-s/metrics.jsonl'],
      ['starpo', 4, 'starpo/seed-4/metrics.jsonl'],
      ['starpo-s', 4, 'starpo-s/seed-4/metrics.jsonl'],
    ]);
    expect(manifest.runs![2].trainCommand).toContain(
      '--seed 4 --backend wasm --workers 1 --set trainer.stopAfterCollapse=5',
    );
    expect(parseLessonManifest(JSON.parse(fs.readFileSync(path.join(out, 'manifest.json'), 'utf8')))).toEqual(manifest);
    expect(manifest).toMatchObject({
      preset: 'echo-trap',
      steps: 1,
      seed: 3,
      backend: 'wasm',
      workers: 1,
      rolloutsPerStep: 2,
      command: 'the command',
    });
    expect(manifest.commit).toMatch(/^[0-9a-f]{40}$/);
    for (const arm of manifest.arms) {
      expect(arm.steps).toBe(1);
      expect(arm.trainCommand).toContain(
        `--preset echo-trap --arm ${arm.name} --steps 1 --seed 3 --backend wasm --workers 1`,
      );
      const rows = parseMetricsJsonl(fs.readFileSync(path.join(out, arm.metrics), 'utf8'));
      expect(rows.map((r) => r.step)).toEqual([0, 1]);
      expect(rows[1]['train/Bandit/success']).toBeGreaterThanOrEqual(0);
      // The run logged 4 per step and split (trainer.logRollouts); 2 of each are kept: val 0, train 1, val 1.
      const rollouts = parseRolloutsJsonl(fs.readFileSync(path.join(out, arm.rollouts), 'utf8'));
      expect(rollouts.map((r) => `${r.step}/${r.split}`)).toEqual([
        '0/val',
        '0/val',
        '1/train',
        '1/train',
        '1/val',
        '1/val',
      ]);
      expect(rollouts.filter((r) => r.split === 'val').map((r) => r.seed)).toEqual([123, 124, 123, 124]);
    }
    // Both arms start from the same warm start and the same seeds: the validation before training is identical.
    const [a, b] = manifest.arms.map(
      (arm) => parseMetricsJsonl(fs.readFileSync(path.join(out, arm.metrics), 'utf8'))[0],
    );
    expect(a['val-env/Bandit/success']).toBeTypeOf('number');
    expect(a['val-env/Bandit/success']).toBe(b['val-env/Bandit/success']);
    expect(fs.readdirSync(root).sort()).toEqual(['lesson', 'runs']); // no staging folder left behind
    // The recording replaced the old one; the fresh-seed table beside it stayed.
    expect(fs.readdirSync(out).sort()).toEqual(['fresh-seeds.json', 'manifest.json', 'starpo', 'starpo-s']);
    expect(fs.readFileSync(path.join(out, 'fresh-seeds.json'), 'utf8')).toBe('{"the table": 1}\n');
    expect(lines).toContain(`kept ${path.join(out, 'fresh-seeds.json')}`);
  }, 240_000);

  it('--replay-marks recomputes only the echo_trap/* keys of a recording and says so in the manifest', () => {
    const shipped = path.resolve(import.meta.dirname, '../../../public/lessons/echo-trap');
    const out = path.join(tmp(), 'lesson');
    fs.cpSync(shipped, out, { recursive: true });
    // Stale marks, as an older detector might have logged them: a warning on every StarPO-S step, no convergence.
    const file = path.join(out, 'starpo-s', 'metrics.jsonl');
    const before = parseMetricsJsonl(fs.readFileSync(file, 'utf8'));
    const stale = before.map((r) => {
      const { ['echo_trap/converged']: _c, ...rest } = r;
      return r.step > 0 ? { ...rest, 'echo_trap/warning': 1, 'echo_trap/signal': 'reward_std' } : rest;
    });
    fs.writeFileSync(
      file,
      stale
        .map((r) => JSON.stringify(r, (_k, v) => (typeof v === 'number' && !Number.isFinite(v) ? null : v)) + '\n')
        .join(''),
    );
    const lines: string[] = [];
    const manifest = replayLessonMarks(out, 'the replay command', (line) => lines.push(line));
    const after = parseMetricsJsonl(fs.readFileSync(file, 'utf8'));
    const strip = (rows: typeof before) =>
      rows.map((r) => Object.fromEntries(Object.entries(r).filter(([k]) => !k.startsWith('echo_trap/'))));
    expect(strip(after)).toEqual(strip(before)); // the training metrics are untouched
    expect(after.map((r) => [r['echo_trap/warning'], r['echo_trap/converged'], r['echo_trap/signal']])).toEqual(
      before.map((r) => [r['echo_trap/warning'], r['echo_trap/converged'], r['echo_trap/signal']]),
    );
    expect(after.some((r) => r['echo_trap/warning'] === 1)).toBe(false);
    // The shipped StarPO-S arm converges (its filter stops training on agreeing groups); the replay reports that step.
    const convergedAt = before.find((r) => r['echo_trap/converged'] === 1)?.step;
    expect(convergedAt).toBeGreaterThan(0);
    expect(lines).toContain(`starpo-s seed ${manifest.seed}: warning at step -, converged at step ${convergedAt}`);
    expect(manifest.marksReplayed?.command).toBe('the replay command');
    expect(
      parseLessonManifest(JSON.parse(fs.readFileSync(path.join(out, 'manifest.json'), 'utf8'))).marksReplayed,
    ).toEqual(manifest.marksReplayed);
  });

  it('leaves the shipped recording as it was when an arm fails to train', async () => {
    const root = tmp();
    const out = path.join(root, 'lesson');
    fs.mkdirSync(out);
    fs.writeFileSync(path.join(out, 'manifest.json'), '{"the":"old recording"}\n');
    await expect(
      recordLesson(
        {
          preset: 'echo-trap',
          steps: 1,
          seed: 0,
          seedsPerArm: 1,
          backend: 'no-such-backend',
          workers: 1,
          rolloutsPerStep: 2,
          out,
          runs: path.join(root, 'runs'),
        },
        'cmd',
        () => {},
      ),
    ).rejects.toThrow(/starpo: ragen train exited with 2/);
    expect(fs.readFileSync(path.join(out, 'manifest.json'), 'utf8')).toBe('{"the":"old recording"}\n');
    expect(fs.readdirSync(root).sort()).toEqual(['lesson', 'runs']);
  }, 60_000);
});
