// The fresh-seed table the lesson page shows (issue 34, item 4): its reader refuses a malformed file in one line, and
// the table that ships with the site holds exactly the seeds docs/echo-trap.md named before they were run, judged by
// today's verdict code from the run folders when they are on this machine.
import * as fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { armCountsOf, lessonCount, parseFreshSeedTable } from '../../../src/ui/lessonRobustness';

const row = (seed: number, failed: string[] = []) => ({
  seed,
  vanilla: { start: 0.4, peak: 0.99, peakStep: 20, final: 0, warningStep: 12, collapseStep: 25 },
  starpoS: { peak: 0.99, final: 0.98, warningStep: null, convergedStep: 30 },
  failed,
});
const table = (rows: unknown[]) => ({
  format: 1,
  preset: 'echo-trap',
  seedsNamedAt: '5b530ed',
  presetCommit: '5f9ee66',
  command: 'bash lesson-lab.sh',
  date: '2026-11-26',
  rows,
});

describe('lesson robustness table', () => {
  it('reads a table and counts the seeds where the whole lesson showed', () => {
    const t = parseFreshSeedTable(table([row(200), row(201, ['holds', 'endsAbove']), row(202)]));
    expect(lessonCount(t)).toBe(2);
    expect(t.rows.map((r) => r.seed)).toEqual([200, 201, 202]);
  });

  it('names the file and the field that is wrong', () => {
    expect(() => parseFreshSeedTable(table([]), 'f.json')).toThrow(/^f\.json: rows: /);
    expect(() => parseFreshSeedTable(table([{ ...row(1), failed: ['flies'] }]), 'f.json')).toThrow(
      /^f\.json: rows\.0\.failed\.0: /,
    );
    expect(() =>
      parseFreshSeedTable(table([{ ...row(1), vanilla: { ...row(1).vanilla, peak: 1.5 } }]), 'f.json'),
    ).toThrow(/^f\.json: rows\.0\.vanilla\.peak: /);
    expect(() => parseFreshSeedTable({ ...table([row(1)]), format: 2 }, 'f.json')).toThrow(/^f\.json: format: /);
    expect(() => parseFreshSeedTable([], 'f.json')).toThrow(/^f\.json: \(top level\): /);
  });

  it("reads the mechanism lesson's table: MI columns, its own conditions, outcome by default", () => {
    expect(parseFreshSeedTable(table([row(1)])).criteria).toBe('outcome');
    const mi = { vanillaEarly: 0.8, vanillaLate: 0.1, starpoSEarly: 0.7, starpoSLate: null };
    const t = parseFreshSeedTable({
      ...table([
        { ...row(400), mi },
        { ...row(401), mi, failed: ['miStays'] },
      ]),
      criteria: 'mechanism',
    });
    expect([t.criteria, lessonCount(t), t.rows[0].mi?.starpoSLate]).toEqual(['mechanism', 1, null]);
    expect(() => parseFreshSeedTable({ ...table([row(1)]), criteria: 'vibes' }, 'f.json')).toThrow(
      /^f\.json: criteria: /,
    );
    expect(() => parseFreshSeedTable(table([{ ...row(1), mi: { ...mi, vanillaEarly: 'high' } }]), 'f.json')).toThrow(
      /^f\.json: rows\.0\.mi\.vanillaEarly: /,
    );
  });

  it('the shipped table holds the fresh seeds the doc named before running them, and the doc states its count', () => {
    const shipped = parseFreshSeedTable(
      JSON.parse(fs.readFileSync('public/lessons/echo-trap/fresh-seeds.json', 'utf8')),
    );
    const doc = fs.readFileSync('docs/echo-trap.md', 'utf8');
    expect(doc, 'docs/echo-trap.md names these fresh seeds').toContain(
      `**fresh training seeds ${shipped.rows.map((r) => r.seed).join(', ')}**`,
    );
    expect(doc).toContain(`lesson on ${lessonCount(shipped)} of ${shipped.rows.length} seeds with both arms`);
    // Each arm's rate as the doc states it, from the same rows.
    const arms = armCountsOf(shipped);
    expect(doc).toContain(`vanilla StarPO collapses after the warning: ${arms.vanilla} of ${arms.runs}`);
    expect(doc).toContain(
      `StarPO-S holds (within 10 points of its peak, 20 above vanilla): ${arms.starpoS} of ${arms.runs}`,
    );
  });

  it("the mechanism lesson's shipped table: the seeds its doc section named, its conditions, the count the doc states", () => {
    const shipped = parseFreshSeedTable(
      JSON.parse(fs.readFileSync('public/lessons/echo-trap-frozenlake/fresh-seeds.json', 'utf8')),
    );
    expect([shipped.preset, shipped.criteria]).toEqual(['echo-trap-frozenlake', 'mechanism']);
    const doc = fs.readFileSync('docs/echo-trap.md', 'utf8');
    expect(doc, 'docs/echo-trap.md names these fresh seeds').toContain(
      `**Fresh training seeds: ${shipped.rows.map((r) => r.seed).join(', ')}.**`,
    );
    const falls = shipped.rows.filter((r) => !r.failed.includes('miFalls')).length;
    const stays = shipped.rows.filter((r) => !r.failed.includes('miStays')).length;
    expect(doc).toContain(
      `MI fell in vanilla before its collapse on ${falls} of ${shipped.rows.length} seeds, stayed up in StarPO-S on ${stays}; both on ${lessonCount(shipped)}`,
    );
    for (const row of shipped.rows) {
      expect(row.mi, `seed ${row.seed} carries its MI`).toBeDefined();
      // "MI falls first" needs a collapse.
      if (!row.failed.includes('miFalls')) expect(row.vanilla.collapseStep).not.toBeNull();
    }
  });

  it("the mechanism lesson's curves agree with its rows: the same final success, no sample above the peak, MI windows inside the curve's range", () => {
    const shipped = parseFreshSeedTable(
      JSON.parse(fs.readFileSync('public/lessons/echo-trap-frozenlake/fresh-seeds.json', 'utf8')),
    );
    for (const row of shipped.rows) {
      const { vanilla, starpoS } = row.series!;
      expect(vanilla.success.at(-1)).toBeCloseTo(row.vanilla.final, 3);
      expect(starpoS.success.at(-1)).toBeCloseTo(row.starpoS.final, 3);
      expect(Math.max(...starpoS.success)).toBeLessThanOrEqual(row.starpoS.peak + 1e-4);
      expect(vanilla.success[0]).toBeCloseTo(row.vanilla.start, 3);
      // StarPO-S's late MI is a mean over its last 20 steps, all of them sampled (every 5th step).
      const lastMi = starpoS.mi!.filter(
        (v, i) => v !== null && starpoS.step[i] >= starpoS.step.at(-1)! - 20,
      ) as number[];
      expect(lastMi.reduce((a, b) => a + b, 0) / lastMi.length).toBeCloseTo(row.mi!.starpoSLate!, 3);
    }
  });
});
