import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  JsonlSink,
  readMetricsJsonl,
  readRolloutsJsonl,
  repairTornTail,
  truncateJsonlFileAfter,
} from '../../../src/metrics/jsonlSink';

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ragen-metrics-'));
});
afterEach(() => {
  fs.rmSync(dir, { recursive: true, force: true });
});

const metricsFile = () => path.join(dir, 'metrics.jsonl');
const rolloutsFile = () => path.join(dir, 'rollouts.jsonl');

describe('JsonlSink', () => {
  it('appends one line per step and reads it back (NaN stored as null)', () => {
    const sink = new JsonlSink(path.join(dir, 'run'), { fsync: false });
    sink.write(0, { 'train/Bandit/success': 0.25, 'actor/grad_norm': NaN });
    sink.write(1, { 'train/Bandit/success': 0.5, 'actor/grad_norm': 1.5 });
    sink.writeRollouts(1, [{ envId: 0, turns: [{ think: 'pick dragon', answer: 'Dragon', reward: 1 }] }]);
    sink.close();
    const text = fs.readFileSync(path.join(dir, 'run', 'metrics.jsonl'), 'utf8');
    expect(text).toBe(
      '{"step":0,"train/Bandit/success":0.25,"actor/grad_norm":null}\n{"step":1,"train/Bandit/success":0.5,"actor/grad_norm":1.5}\n',
    );
    const rows = readMetricsJsonl(path.join(dir, 'run', 'metrics.jsonl'));
    expect(rows).toHaveLength(2);
    expect(rows[0]['actor/grad_norm']).toBeNaN();
    expect(rows[1]).toEqual({ step: 1, 'train/Bandit/success': 0.5, 'actor/grad_norm': 1.5 });
    expect(readRolloutsJsonl(path.join(dir, 'run', 'rollouts.jsonl'))).toEqual([
      { step: 1, envId: 0, turns: [{ think: 'pick dragon', answer: 'Dragon', reward: 1 }] },
    ]);
    expect(() => sink.write(2, {})).toThrow(/closed/);
  });

  it('stores the text metric echo_trap/signal and reads it back', () => {
    const sink = new JsonlSink(path.join(dir, 'run'), { fsync: false });
    sink.write(3, { 'echo_trap/warning': 1, 'echo_trap/signal': 'reward_std+mi_zscore_ema' });
    sink.close();
    expect(readMetricsJsonl(path.join(dir, 'run', 'metrics.jsonl'))).toEqual([
      { step: 3, 'echo_trap/warning': 1, 'echo_trap/signal': 'reward_std+mi_zscore_ema' },
    ]);
  });

  it('creates both files up front, even before the first step', () => {
    new JsonlSink(dir).close();
    expect(fs.readFileSync(metricsFile(), 'utf8')).toBe('');
    expect(fs.readFileSync(rolloutsFile(), 'utf8')).toBe('');
  });

  it('survives a torn last line: reading skips it, reopening repairs it', () => {
    const sink = new JsonlSink(dir);
    sink.write(0, { x: 1 });
    sink.write(1, { x: 2 });
    sink.close();
    fs.appendFileSync(metricsFile(), '{"step":2,"x":'); // the process was killed mid-write
    fs.appendFileSync(rolloutsFile(), '{"step":2,"tu');
    expect(readMetricsJsonl(metricsFile()).map((r) => r.step)).toEqual([0, 1]);

    const resumed = new JsonlSink(dir);
    expect(resumed.lastStep).toBe(1);
    resumed.write(2, { x: 3 });
    resumed.writeRollouts(2, [{ ok: true }]);
    resumed.close();
    expect(fs.readFileSync(metricsFile(), 'utf8')).toBe('{"step":0,"x":1}\n{"step":1,"x":2}\n{"step":2,"x":3}\n');
    expect(readRolloutsJsonl(rolloutsFile())).toEqual([{ step: 2, ok: true }]);
  });

  it('repairs a complete last line that lost its newline instead of dropping it', () => {
    fs.writeFileSync(metricsFile(), '{"step":0,"x":1}\n{"step":1,"x":2}');
    expect(repairTornTail(metricsFile())).toBe('added-newline');
    expect(repairTornTail(metricsFile())).toBe('none');
    fs.appendFileSync(metricsFile(), '{"step":2');
    expect(repairTornTail(metricsFile())).toBe('dropped-torn-line');
    expect(fs.readFileSync(metricsFile(), 'utf8')).toBe('{"step":0,"x":1}\n{"step":1,"x":2}\n');
    expect(repairTornTail(path.join(dir, 'missing.jsonl'))).toBe('none');
  });

  it('continues an existing run and refuses to duplicate steps', () => {
    const a = new JsonlSink(dir);
    a.write(0, { x: 0 });
    a.write(1, { x: 1 });
    a.close();
    const b = new JsonlSink(dir);
    expect(b.lastStep).toBe(1);
    expect(() => b.write(1, { x: 9 })).toThrow(/not after the last written step 1/);
    b.write(2, { x: 2 });
    b.close();
    expect(readMetricsJsonl(metricsFile()).map((r) => r.x)).toEqual([0, 1, 2]);
  });

  it('truncateAfter(step) drops later metrics and rollouts so a resume loses and repeats nothing', () => {
    const sink = new JsonlSink(dir);
    for (let s = 0; s <= 5; s++) {
      sink.write(s, { x: s });
      sink.writeRollouts(s, [{ id: `${s}a` }, { id: `${s}b` }]);
    }
    // the checkpoint was saved after step 3; steps 4 and 5 will be recomputed
    sink.truncateAfter(3);
    expect(sink.lastStep).toBe(3);
    expect(() => sink.write(3, {})).toThrow(/not after/);
    sink.write(4, { x: 40 });
    sink.writeRollouts(4, [{ id: 'new' }]);
    sink.close();
    expect(readMetricsJsonl(metricsFile()).map((r) => [r.step, r.x])).toEqual([
      [0, 0],
      [1, 1],
      [2, 2],
      [3, 3],
      [4, 40],
    ]);
    expect(readRolloutsJsonl(rolloutsFile()).map((r) => r.id)).toEqual([
      '0a',
      '0b',
      '1a',
      '1b',
      '2a',
      '2b',
      '3a',
      '3b',
      'new',
    ]);
    expect(fs.readdirSync(dir).sort()).toEqual(['metrics.jsonl', 'rollouts.jsonl']); // no temp files left
  });

  it('truncates a file on its own, leaving a missing file missing', () => {
    fs.writeFileSync(metricsFile(), '{"step":0}\n{"step":1}\n{"step":2}\n');
    expect(truncateJsonlFileAfter(metricsFile(), 0)).toEqual({ kept: 1, dropped: 2 });
    expect(fs.readFileSync(metricsFile(), 'utf8')).toBe('{"step":0}\n');
    expect(truncateJsonlFileAfter(path.join(dir, 'none.jsonl'), 3)).toEqual({ kept: 0, dropped: 0 });
    expect(fs.existsSync(path.join(dir, 'none.jsonl'))).toBe(false);
  });
});
