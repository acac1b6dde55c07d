// experiments/lab/train-until-collapse.ts, the lesson lab's STOP_AFTER_COLLAPSE: it must stop a training command K steps
// after the collapse it reads from the run's metrics.jsonl, and leave a run that never collapses alone. The training
// command here is a small Node script that appends one metrics row every 40 ms (the wrapper only reads the file).
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readMetrics } from '../../../experiments/lib/analysis';
import { vanillaVerdict } from '../../../experiments/lib/lessonVerdict';

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'until-collapse-'));
afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }));

/** A fake `ragen train`: writes `curve` (training success per step) into RUN/metrics.jsonl, one row per 40 ms. */
const FAKE_TRAIN = `
const fs = require('node:fs');
const [dir, curve, exitCode] = [process.argv[2], JSON.parse(process.argv[3]), Number(process.argv[4])];
fs.mkdirSync(dir, { recursive: true });
let step = 0;
const timer = setInterval(() => {
  if (step === curve.length) { clearInterval(timer); process.exit(exitCode); }
  fs.appendFileSync(dir + '/metrics.jsonl', JSON.stringify({ step: step + 1, 'train/FrozenLake/success': curve[step] }) + '\\n');
  step++;
}, 40);`;
const fakeTrain = path.join(scratch, 'fake-train.cjs');
fs.writeFileSync(fakeTrain, FAKE_TRAIN);

function runWrapped(k: number, runDir: string, curve: number[], exitCode = 0): Promise<{ code: number | null; out: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'experiments/lab/train-until-collapse.ts', String(k), runDir,
    process.execPath, fakeTrain, runDir, JSON.stringify(curve), String(exitCode)],
  { env: { ...process.env, TRAIN_UNTIL_COLLAPSE_POLL_MS: '50' } });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  return new Promise((resolve) => child.on('exit', (code) => resolve({ code, out })));
}

const rise = Array.from({ length: 10 }, (_, i) => 0.2 + 0.08 * i);   // 0.2 -> 0.92

describe('train-until-collapse', () => {
  it('stops a run K steps after its collapse and says where', async () => {
    const dir = path.join(scratch, 'collapsing');
    const curve = [...rise, ...Array(10).fill(0.9), ...Array(400).fill(0)];   // 420 steps: about 17 s if not stopped
    const { code, out } = await runWrapped(5, dir, curve);
    expect(code, out).toBe(0);
    const rows = readMetrics(dir);
    const { collapseStep } = vanillaVerdict(rows);
    expect(collapseStep).not.toBeNull();
    const note = JSON.parse(fs.readFileSync(path.join(dir, 'stopped-after-collapse.json'), 'utf8'));
    expect(note).toMatchObject({ collapseStep, keptSteps: 5 });
    expect(note.lastStep).toBeGreaterThanOrEqual(collapseStep! + 5);
    // Stopped soon after (polling every 50 ms, a row every 40 ms), long before the fake run's 420 steps.
    expect(rows[rows.length - 1].step).toBeLessThan(collapseStep! + 5 + 40);
  }, 60_000);

  it('lets a run that never collapses finish, with its own exit code', async () => {
    const dir = path.join(scratch, 'holding');
    const curve = [...rise, ...Array(20).fill(0.9)];
    const { code } = await runWrapped(5, dir, curve, 3);
    expect(code).toBe(3);
    expect(readMetrics(dir)).toHaveLength(curve.length);
    expect(fs.existsSync(path.join(dir, 'stopped-after-collapse.json'))).toBe(false);
  }, 60_000);
});
