// `ragen import-metrics` on a RAGEN run's W&B history and config: a run directory the playground and the experiments'
// plots read (metrics.jsonl with RAGEN's keys, config.json through the export table, import.json); bad input exits 2
// and writes nothing; an existing run is never overwritten.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { main } from '../../../src/cli/main';
import { parseMetricsJsonl } from '../../../src/metrics/jsonl';
import { readMetrics, series } from '../../../experiments/lib/analysis';

let tmp: string;
const HISTORY = [
  '_step,_runtime,train/FrozenLake/success,val-env/FrozenLake/success,actor/entropy_loss,rollout/in_group_std,train/response_length',
  '0,10,,0.2,,,',
  '1,40,0.25,,1.2,0.41,55',
  '2,70,0.3,0.35,1.1,0.38,52',
].join('\n');
// A fragment of a Hydra-composed RAGEN config (outputs/.../.hydra/config.yaml), interpolations unresolved.
const RAGEN_CONFIG = `
ppo_mini_batch_size: 32
micro_batch_size_per_gpu: 4
model_path: Qwen/Qwen2.5-0.5B-Instruct
actor_rollout_ref:
  actor: {ppo_mini_batch_size: '\${ppo_mini_batch_size}', clip_ratio_high: 0.28, optim: {lr: 1.0e-06}}
  rollout: {rollout_filter_ratio: 0.25, rollout_filter_type: std, response_length: 400}
es_manager:
  train: {env_groups: 8, group_size: 16, env_configs: {tags: [FrozenLake], n_groups: [8]}}
  val: {env_groups: 256, group_size: 1, env_configs: {tags: [FrozenLake], n_groups: [256]}}
custom_envs:
  FrozenLake: {env_type: frozen_lake, max_actions_per_traj: 10, max_tokens: 100, env_config: null}
trainer: {total_training_steps: 200, test_freq: 10}
`;

async function ragen(...args: string[]): Promise<{ code: number; stderr: string }> {
  const chunks: string[] = [];
  const spy = vi.spyOn(process.stderr, 'write').mockImplementation((c: string | Uint8Array) => {
    chunks.push(String(c));
    return true;
  });
  const out = vi.spyOn(process.stdout, 'write').mockImplementation(() => true);
  const err = vi.spyOn(console, 'error').mockImplementation((...a: unknown[]) => {
    chunks.push(a.join(' ') + '\n');
  });
  try {
    const code = await main(['node', 'ragen', ...args]);
    return { code, stderr: chunks.join('') };
  } finally {
    spy.mockRestore();
    out.mockRestore();
    err.mockRestore();
  }
}

beforeAll(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'import-metrics-'));
  fs.writeFileSync(path.join(tmp, 'history.csv'), HISTORY);
  fs.writeFileSync(path.join(tmp, 'config.yaml'), RAGEN_CONFIG);
});
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

describe('ragen import-metrics', () => {
  it('writes a run directory: metrics.jsonl with RAGEN keys, config.json from the RAGEN config, import.json', async () => {
    const out = path.join(tmp, 'cluster-run');
    const r = await ragen(
      'import-metrics',
      path.join(tmp, 'history.csv'),
      '--out',
      out,
      '--ragen-config',
      path.join(tmp, 'config.yaml'),
    );
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/3 steps \(0 to 2\)/);
    expect(r.stderr).toMatch(/renamed train\/response_length -> response_length\/mean/);
    expect(r.stderr).toMatch(/left out _runtime: W&B bookkeeping/);
    const rows = parseMetricsJsonl(fs.readFileSync(path.join(out, 'metrics.jsonl'), 'utf8'));
    expect(rows.map((x) => x.step)).toEqual([0, 1, 2]);
    expect(rows[2]).toEqual({
      step: 2,
      'train/FrozenLake/success': 0.3,
      'val-env/FrozenLake/success': 0.35,
      'actor/entropy_loss': 1.1,
      'rollout/in_group_std': 0.38,
      'response_length/mean': 52,
    });
    // The experiments' reader draws it like a local run.
    expect(series(readMetrics(out), 'val-env/FrozenLake/success')).toEqual([
      [0, 0.2],
      [2, 0.35],
    ]);
    const config = JSON.parse(fs.readFileSync(path.join(out, 'config.json'), 'utf8'));
    expect(config.agent.trainEnvs).toEqual([{ tag: 'FrozenLake', nGroups: 8, maxActionsPerTraj: 10, maxTokens: 100 }]);
    expect(config.agent.groupSize).toBe(16);
    expect(config.actor.ppoMiniBatchSize).toBe(32);
    expect(config.actor.ppoMicroBatchSize).toBe(4);
    expect(config.filter.ratio).toBe(0.25);
    const report = JSON.parse(fs.readFileSync(path.join(out, 'import.json'), 'utf8'));
    expect(report.renamed).toEqual({ 'train/response_length': 'response_length/mean' });
    expect(report.notImported).toEqual({ _runtime: 'W&B bookkeeping' });
  });

  it('exits 2 naming the problem, writing nothing, and never overwrites a run', async () => {
    fs.writeFileSync(path.join(tmp, 'nostep.csv'), 'time,x\n1,2\n');
    const cases: [string[], RegExp][] = [
      [['import-metrics', path.join(tmp, 'missing.csv'), '--out', path.join(tmp, 'a')], /missing\.csv: no such file/],
      [['import-metrics', path.join(tmp, 'nostep.csv'), '--out', path.join(tmp, 'b')], /no step column/],
      [
        [
          'import-metrics',
          path.join(tmp, 'history.csv'),
          '--out',
          path.join(tmp, 'c'),
          '--ragen-config',
          path.join(tmp, 'nope.yaml'),
        ],
        /--ragen-config .*nope\.yaml: no such file/,
      ],
    ];
    for (const [args, message] of cases) {
      const r = await ragen(...args);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr).toMatch(message);
    }
    for (const d of ['a', 'b', 'c']) expect(fs.existsSync(path.join(tmp, d)), d).toBe(false);
    const before = fs.readFileSync(path.join(tmp, 'cluster-run', 'metrics.jsonl'), 'utf8');
    const again = await ragen('import-metrics', path.join(tmp, 'nostep.csv'), '--out', path.join(tmp, 'cluster-run'));
    expect(again.code).toBe(2);
    const taken = await ragen('import-metrics', path.join(tmp, 'history.csv'), '--out', path.join(tmp, 'cluster-run'));
    expect(taken.code).toBe(2);
    expect(taken.stderr).toMatch(/already holds a run/);
    expect(fs.readFileSync(path.join(tmp, 'cluster-run', 'metrics.jsonl'), 'utf8')).toBe(before);
  });
});
