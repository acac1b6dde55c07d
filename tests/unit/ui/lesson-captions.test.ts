// Every claim the lesson charts' captions make, checked against the recording that ships with the site: a caption
// that says a curve falls is one whose recorded curve falls.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseMetricsJsonl } from '../../../src/metrics/jsonl';
import { LESSON_PRESETS, lessonFolder, parseLessonManifest } from '../../../src/ui/lesson';
import { LESSON_CAPTIONS, armCurve, checkClaim, curveShape, type ArmRole } from '../../../src/ui/lesson-captions';
import type { LessonRunRows } from '../../../src/ui/lessonRuns';
import { lessonChartSpecs } from '../../../src/ui/charts';

const PUBLIC = path.resolve(__dirname, '../../../public');

function recording(preset: string): Record<ArmRole, LessonRunRows[]> {
  const dir = path.join(PUBLIC, lessonFolder(preset));
  const manifest = parseLessonManifest(JSON.parse(fs.readFileSync(path.join(dir, 'manifest.json'), 'utf8')));
  const files = manifest.runs ?? manifest.arms.map((a) => ({ ...a, seed: manifest.seed }));
  const runs = files.map((f) => ({
    arm: f.name,
    seed: f.seed,
    rows: parseMetricsJsonl(fs.readFileSync(path.join(dir, f.metrics), 'utf8'), f.metrics),
  }));
  const [vanilla, stabilised] = manifest.arms.map((a) => a.name);
  return { vanilla: runs.filter((r) => r.arm === vanilla), stabilised: runs.filter((r) => r.arm === stabilised) };
}

describe.each(LESSON_PRESETS)('the captions of lesson %s', (preset) => {
  const runs = recording(preset);
  const tag = preset === 'echo-trap' ? 'Bandit' : 'FrozenLake';
  it('cover every chart of the lesson', () => {
    const keys = lessonChartSpecs([tag], preset !== 'echo-trap').map((s) => s.key);
    expect(LESSON_CAPTIONS[preset].map((c) => c.key).sort()).toEqual([...keys].sort());
  });
  for (const caption of LESSON_CAPTIONS[preset]) {
    for (const claim of caption.claims) {
      it(`${caption.key}: ${claim.arm} ${claim.relation}${claim.other ? ` ${claim.other}` : ''}`, () => {
        const { ok, detail } = checkClaim(claim, caption.key, runs);
        expect(ok, detail).toBe(true);
      });
    }
  }
});

describe('checkClaim', () => {
  const row = (step: number, v: number | undefined) => ({
    step,
    'train/batch_size': v === undefined ? 0 : 8,
    ...(v === undefined ? {} : { m: v, 'train/X/success': v }),
  });
  const run = (arm: string, values: (number | undefined)[]): LessonRunRows => ({
    arm,
    seed: 0,
    rows: values.map((v, i) => row(i + 1, v)),
  });
  const falling = run('a', [1, 1, 1, 1, 1, 1, 0.2, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1]);
  const flat = run('b', [0.5, 0.6, 0.7, 0.8, 0.9, 1, 1, 1, undefined, 1, 1, 1, 1, 1, 1]);
  const runs = { vanilla: [falling], stabilised: [flat] };
  it('tells a fall from a hold, and which arm ends above', () => {
    expect(checkClaim({ arm: 'vanilla', relation: 'falls' }, 'm', runs).ok).toBe(true);
    expect(checkClaim({ arm: 'stabilised', relation: 'falls' }, 'm', runs).ok).toBe(false);
    expect(checkClaim({ arm: 'stabilised', relation: 'holds' }, 'm', runs).ok).toBe(true);
    expect(checkClaim({ arm: 'vanilla', relation: 'dips' }, 'm', runs).ok).toBe(true);
    expect(checkClaim({ arm: 'stabilised', relation: 'dips' }, 'm', runs).ok).toBe(false);
    expect(checkClaim({ arm: 'vanilla', relation: 'holds' }, 'm', runs).ok).toBe(false);
    expect(checkClaim({ arm: 'stabilised', relation: 'above', other: 'vanilla' }, 'm', runs).ok).toBe(true);
    expect(checkClaim({ arm: 'vanilla', relation: 'above', other: 'stabilised' }, 'm', runs).ok).toBe(false);
  });
  it('counts the training steps without the metric', () => {
    expect(checkClaim({ arm: 'stabilised', relation: 'gaps' }, 'm', runs).ok).toBe(true);
    expect(checkClaim({ arm: 'vanilla', relation: 'noGaps' }, 'm', runs).ok).toBe(true);
    expect(checkClaim({ arm: 'vanilla', relation: 'gaps' }, 'm', runs).ok).toBe(false);
  });
  it('holds a stopped run at its last success in the mean', () => {
    const short = run('a', [1, 1, 0]);
    const long = run('a', [1, 1, 1, 1, 1]);
    expect(armCurve([short, long], 'train/X/success')).toEqual([
      [1, 1],
      [2, 1],
      [3, 0.5],
      [4, 0.5],
      [5, 0.5],
    ]);
    // Other metrics average only the runs that logged the step: 1, 1, 0.5, 1, 1.
    expect(curveShape(armCurve([short, long], 'm'))!.end).toBeCloseTo(0.9);
  });
});
