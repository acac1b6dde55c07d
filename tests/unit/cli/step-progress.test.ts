// What `ragen train` says inside a long step (src/node/stepProgress.ts): silence for the first interval of a step,
// then at most one line per interval, the bar fed instead on a terminal; and the CLI wiring, on a real bandit-tiny
// step with the interval at 0.
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { StepProgress, describePhase } from '../../../src/node/stepProgress';

describe('StepProgress', () => {
  it("logs nothing in a step's first interval, then one line per interval, counting from each step's start", () => {
    let t = 0;
    const lines: string[] = [];
    const p = new StepProgress({ log: (l) => lines.push(l), everySeconds: 10, now: () => t });
    p.startStep(3);
    for (t = 0; t < 10_000; t += 500) p.report('rollout', t, 40_000);
    expect(lines).toEqual([]);
    for (; t <= 25_000; t += 500) p.report('update', 2, 8);
    expect(lines).toEqual([
      '  step 3: update, optimizer step 2/8 (10 s into the step)',
      '  step 3: update, optimizer step 2/8 (20 s into the step)',
    ]);
    p.startStep(4);
    p.report('scoring', 1, 4);
    expect(lines).toHaveLength(2); // a new step starts silent again
    expect(p.phase).toBe('scoring, micro-batch 1/4');
  });

  it("feeds the bar every report instead of logging, and clears it at a step's start", () => {
    const shown: string[] = [];
    const lines: string[] = [];
    const p = new StepProgress({ log: (l) => lines.push(l), everySeconds: 0, now: () => 1e6 });
    p.useBar((phase) => shown.push(phase));
    p.startStep(1);
    p.report('rollout', 50, 200);
    p.report('rollout', 200, 200);
    expect(shown).toEqual(['', 'rollout 25 %', 'rollout 100 %']);
    expect(lines).toEqual([]);
  });

  it('describes each phase', () => {
    expect(describePhase('validation', 1, 3)).toBe('validation 33 %');
    expect(describePhase('rollout', 0, 0)).toBe('rollout 0 %');
    expect(describePhase('collapse', 2, 5)).toBe('collapse diagnostics 2/5');
  });

  it('refuses a RAGEN_PROGRESS_SECONDS that is not a number of seconds', () => {
    const before = process.env.RAGEN_PROGRESS_SECONDS;
    try {
      process.env.RAGEN_PROGRESS_SECONDS = 'soon';
      expect(() => new StepProgress({ log: () => {} })).toThrow(/RAGEN_PROGRESS_SECONDS=soon/);
    } finally {
      if (before === undefined) delete process.env.RAGEN_PROGRESS_SECONDS;
      else process.env.RAGEN_PROGRESS_SECONDS = before;
    }
  });
});

describe('ragen train, inside a step', () => {
  it('logs where a slow step is (interval 0: every report), rollout then update', async () => {
    const out = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'ragen-progress-')), 'run');
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [
        path.resolve('bin/ragen.js'),
        'train',
        '--preset',
        'bandit-tiny',
        '--backend',
        'wasm',
        '--workers',
        '1',
        '--steps',
        '1',
        '--set',
        'agent.groupSize=8',
        '--out',
        out,
        '--set',
        'trainer.valBeforeTrain=false',
        '--set',
        'trainer.testFreq=0',
      ],
      { env: { ...process.env, RAGEN_PROGRESS_SECONDS: '0' }, maxBuffer: 1 << 26, timeout: 300_000 },
    );
    const lines = stdout.split('\n').filter((l) => l.startsWith('  step 1: '));
    const rollout = lines.findIndex((l) => /^ {2}step 1: rollout \d+ %/.test(l));
    const update = lines.findIndex((l) => /^ {2}step 1: update, optimizer step \d+\/\d+/.test(l));
    expect(rollout).toBeGreaterThanOrEqual(0);
    expect(update).toBeGreaterThan(rollout);
    expect(stdout).toMatch(/^step 1\/1 /m); // the step's own line still follows
  }, 300_000);
});
