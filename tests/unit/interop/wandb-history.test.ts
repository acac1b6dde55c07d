// A RAGEN run's W&B history, in each shape W&B and pandas export it, read into metrics rows with RAGEN's keys.
import { describe, expect, it } from 'vitest';
import { parseWandbHistory } from '../../../src/interop/wandbHistory';
import { importRunFile } from '../../../src/ui/run-files';

// pandas' run.history().to_csv(): an unnamed index column, W&B's _step/_runtime, a table column whose JSON holds
// commas and quotes, NaN, and empty cells where a key was not logged that step (validation every other step).
const PANDAS_CSV = [
  ',_step,_runtime,train/Bandit/success,val-env/Bandit/success,rollout/in_group_std,train/response_length,response_length/mean,val/generations',
  '0,0,12.5,,0.5,,,,',
  '1,1,30.1,0.25,,0.43,41,310,"{""_type"": ""table-file"", ""path"": ""a,b""}"',
  '2,2,47.9,0.5,0.75,NaN,38.5,305,',
].join('\n');

describe('parseWandbHistory', () => {
  it('reads pandas CSV: steps from _step, missing cells left out, NaN kept, RAGEN-only keys renamed, the rest listed as left out', () => {
    const h = parseWandbHistory('history.csv', PANDAS_CSV);
    expect(h.stepColumn).toBe('_step');
    expect(h.rows.map((r) => r.step)).toEqual([0, 1, 2]);
    expect(h.rows[0]).toEqual({ step: 0, 'val-env/Bandit/success': 0.5 });
    expect(h.rows[1]['train/Bandit/success']).toBe(0.25);
    expect(h.rows[2]['rollout/in_group_std']).toBeNaN();
    // RAGEN's assistant-token length is our response_length/mean; veRL's whole-dialogue length moves aside.
    expect(h.rows[2]['response_length/mean']).toBe(38.5);
    expect(h.rows[2]['verl/response_length/mean']).toBe(305);
    expect(h.renamed).toEqual({
      'train/response_length': 'response_length/mean',
      'response_length/mean': 'verl/response_length/mean',
    });
    expect(Object.keys(h.dropped).sort()).toEqual(['_runtime', 'val/generations']);
    expect(h.dropped['val/generations']).toMatch(/not numeric/);
  });

  it("reads a chart's CSV export: Step, '<run> - <key>' columns, smoothing bands left out", () => {
    const csv =
      'Step,sokoban-8gpu - val-env/SimpleSokoban/success,sokoban-8gpu - val-env/SimpleSokoban/success__MIN,sokoban-8gpu - val-env/SimpleSokoban/success__MAX\n10,0.2,0.1,0.3\n20,0.25,0.2,0.3\n';
    const h = parseWandbHistory('chart.csv', csv);
    expect(h.rows).toEqual([
      { step: 10, 'val-env/SimpleSokoban/success': 0.2 },
      { step: 20, 'val-env/SimpleSokoban/success': 0.25 },
    ]);
    expect(Object.values(h.dropped).every((why) => /smoothing band/.test(why))).toBe(true);
  });

  it('reads JSON records (with the bare NaN Python writes), JSON lines, {columns, data} and pandas column orientation', () => {
    const records =
      '[{"_step": 1, "actor/entropy_loss": 0.9, "actor/grad_norm": NaN}, {"_step": 2, "actor/entropy_loss": 0.8, "actor/grad_norm": -Infinity}]';
    const a = parseWandbHistory('h.json', records);
    expect(a.rows[0]['actor/entropy_loss']).toBe(0.9);
    // Bare NaN / -Infinity are values (issue 31: they used to read as "not logged", so an all-NaN column vanished);
    // metrics.jsonl stores both as null, and the import notes the column.
    expect(a.rows[0]['actor/grad_norm']).toBeNaN();
    expect(a.rows[1]['actor/grad_norm']).toBe(-Infinity);
    expect(a.notes['actor/grad_norm']).toMatch(/no finite value/);
    const lines = '{"_step": 1, "actor/pg_loss": 0.1}\n{"_step": 2, "actor/pg_loss": 0.2, "_timestamp": 1}\n';
    expect(parseWandbHistory('wandb-history.jsonl', lines).rows).toEqual([
      { step: 1, 'actor/pg_loss': 0.1 },
      { step: 2, 'actor/pg_loss': 0.2 },
    ]);
    const table = '{"columns": ["step", "critic/vf_loss"], "data": [[1, 0.5], [2, 0.4]]}';
    expect(parseWandbHistory('t.json', table).rows).toEqual([
      { step: 1, 'critic/vf_loss': 0.5 },
      { step: 2, 'critic/vf_loss': 0.4 },
    ]);
    const columns = '{"_step": {"0": 1, "1": 2}, "timing_s/step": {"0": 30.5, "1": 29}}';
    expect(parseWandbHistory('c.json', columns).rows).toEqual([
      { step: 1, 'timing_s/step': 30.5 },
      { step: 2, 'timing_s/step': 29 },
    ]);
  });

  it('merges rows W&B split over one step, and sorts by step', () => {
    const h = parseWandbHistory('h.json', '[{"_step": 3, "a/x": 1}, {"_step": 1, "a/x": 0}, {"_step": 3, "b/y": 2}]');
    expect(h.rows).toEqual([
      { step: 1, 'a/x': 0 },
      { step: 3, 'a/x': 1, 'b/y': 2 },
    ]);
  });

  it('names the problem: no step column, a bad step, unreadable JSON, no rows', () => {
    expect(() => parseWandbHistory('h.csv', 'time,x\n1,2\n')).toThrow(
      /h\.csv: no step column \(expected one of _step, step, Step, global_step; found time, x\)/,
    );
    expect(() => parseWandbHistory('h.csv', '_step,x\n1.5,2\n')).toThrow(
      /row 1 has step "1\.5", not a non-negative integer/,
    );
    expect(() => parseWandbHistory('h.json', '{"_step": 1,\n oops')).toThrow(/h\.json: neither JSON nor JSON lines/);
    expect(() => parseWandbHistory('h.json', '[]')).toThrow(/no history rows/);
  });

  it("is what the playground's run import uses for .csv, .json and W&B's jsonl", () => {
    const enc = (s: string) => new TextEncoder().encode(s);
    const csv = importRunFile('ragen-run.csv', enc(PANDAS_CSV));
    expect(csv.config).toBeNull();
    expect(csv.rows.map((r) => r.step)).toEqual([0, 1, 2]);
    expect(csv.rows[1]['train/Bandit/success']).toBe(0.25);
    expect(importRunFile('wandb-history.jsonl', enc('{"_step": 4, "x/y": 1}\n')).rows).toEqual([{ step: 4, 'x/y': 1 }]);
    expect(importRunFile('metrics.jsonl', enc('{"step": 4, "x/y": 1}\n')).rows).toEqual([{ step: 4, 'x/y': 1 }]);
  });
});
