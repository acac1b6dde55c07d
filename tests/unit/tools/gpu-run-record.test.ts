// The record of a GPU run (tools/device/gpuRunRecord.ts) from full-run.sh's output files, and BENCHMARKS.md's table
// of them (tools/device/gpu-runs-table.ts).
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { GpuRunRecord, buildGpuRunRecord, recordPath } from '../../../tools/device/gpuRunRecord';
import {
  TABLE_BEGIN,
  TABLE_END,
  readGpuRuns,
  renderGpuRunsTable,
  replaceGpuRunsTable,
} from '../../../tools/device/gpu-runs-table';

const dirs: string[] = [];
afterEach(() => dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true })));
function outDir(files: Record<string, unknown>): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'gpu-run-'));
  dirs.push(dir);
  for (const [name, content] of Object.entries(files)) {
    writeFileSync(path.join(dir, name), typeof content === 'string' ? content : JSON.stringify(content));
  }
  return dir;
}

const ENV =
  'date 2026-12-08T01:02:03Z; git 1a2b3c4; node v22.1.0\n' +
  'cpus 16; NVIDIA H100 80GB HBM3, 81559 MiB, 580.159.04\ntorch: 2.11.0 cuda True\n' +
  'backend webgpu; tiny 0; layers 24; steps 1; VK_ICD_FILENAMES= VK_DRIVER_FILES=/x\n';
const PAPER_CONFIG = { agent: { envGroups: 8, groupSize: 16, maxTurn: 5 }, rollout: { maxNewTokens: 400 } };
const METRICS = {
  step: 1,
  'timing_s/step': 80.5,
  'timing_s/gen': 40.25,
  'timing_s/update_actor': 20,
  'timing_s/update_critic': 15.5,
  'perf/total_num_tokens': 87128,
};
const TORCH = {
  torch: '2.11.0',
  device: 'cuda',
  results: {
    'paper bf16 step s': 60,
    'paper f32 step s': 120,
    'paper bf16 train tokens': 87128,
    'train 1x1536 bf16 tokens/s': 90000,
    'train 1x1536 f32 tokens/s': 30000,
    'generate b128 bf16 tokens/s': 8000,
    'generate b128 f32 tokens/s': 4200,
  },
};
const FULL = {
  'env.txt': ENV,
  'summary.txt':
    '== speed (limit 40s): node ...\n== speed: exit 0 after 30 s\n== memory: exit 124 (time limit) after 30 s\n',
  'train-config.json': PAPER_CONFIG,
  'train-metrics.jsonl':
    JSON.stringify({ ...METRICS, step: 0, 'timing_s/step': 999 }) + '\n' + JSON.stringify(METRICS) + '\n',
  'torch-paper.json': TORCH,
  'bench-speed.json': {
    results: { model: { 'qwen0.5b generate b128 tokens/s': 3000, 'qwen0.5b train tokens/s': 111 } },
    adapter: { description: 'NVIDIA', features: ['shader-f16', 'subgroups', 'timestamp-query'] },
  },
  'update-1536.json': { report: [{ tokens: 1536, gradsS: 0.1, adamwS: 0.02 }] },
  'bench-memory.json': {
    memory: [
      { phase: 'actor update', peakBytes: 3 * 2 ** 30, layers: 24 },
      { phase: 'step', peakBytes: 3 * 2 ** 30, layers: 24 },
      { phase: 'step', peakBytes: 2 * 2 ** 30, layers: 12 },
      { phase: 'step', peakBytes: 9 * 2 ** 30, layers: 48, extrapolatedFrom: [12, 24] },
    ],
  },
};

describe('gpu-run-record: the record of a full-run.sh output', () => {
  it("takes each figure from its section's file", () => {
    const r = buildGpuRunRecord(outDir(FULL), { command: 'bash tools/device/full-run.sh' });
    expect(r).toMatchObject({
      date: '2026-12-08',
      commit: '1a2b3c4',
      device: 'NVIDIA H100 80GB HBM3, 81559 MiB, 580.159.04; 16 CPUs',
      command: 'bash tools/device/full-run.sh',
      paperStep: {
        seconds: 80.5,
        rolloutSeconds: 40.25,
        actorUpdateSeconds: 20,
        criticUpdateSeconds: 15.5,
        tokensTrained: 87128,
      },
      torchPaperStep: { seconds: 60 },
      torchTrainTokensPerSecond1x1536: 90000,
      gen128TokensPerSecond: 3000,
      torchGen128TokensPerSecond: 8000,
      torchF32: { paperStepSeconds: 120, trainTokensPerSecond1x1536: 30000, gen128TokensPerSecond: 4200 },
      peakGiB: 3,
      adapterFeatures: ['shader-f16', 'subgroups', 'timestamp-query'],
    });
    expect(r.trainTokensPerSecond1x1536).toBeCloseTo(1536 / 0.12, 6);
    expect(r.note).toContain('train-metrics.jsonl step 1 of 2');
    expect(r.note).toContain('section memory: exit 124 (time limit)');
    expect(recordPath('/nowhere', r)).toBe('/nowhere/2026-12-08-1a2b3c4.json');
  });

  it("records our own pipelines' device features, checks and TFLOP/s from selfcheck.json, else from the bench JSON", () => {
    const checks = [
      { mode: 'f16-storage', ok: true, maxRelError: 1.8e-4 },
      { mode: 'subgroup-matrix', ok: false, maxRelError: null, reason: 'off by 1000.0 times the f16 bound' },
    ];
    const selfcheck = {
      device: { features: ['shader-f16', 'subgroups'] },
      checks,
      timings: [{ product: 'gateUp forward', m: 1536, n: 9728, k: 896, mode: 'f16', ms: 1, tflops: 26.8 }],
    };
    const r = buildGpuRunRecord(outDir({ ...FULL, 'selfcheck.json': selfcheck }), { command: 'x' });
    expect(r.deviceFeatures).toEqual(['shader-f16', 'subgroups']);
    expect(r.ownPipelineChecks).toEqual(checks);
    expect(r.matmulTflops).toEqual({ 'gateUp forward 1536x9728x896 f16': 26.8 });
    const speed = { ...FULL['bench-speed.json'], webgpuDevice: { features: ['subgroups'] } };
    const fromBench = buildGpuRunRecord(
      outDir({ ...FULL, 'bench-speed.json': speed, 'bench-matmul.json': { matmulSelfChecks: checks } }),
      { command: 'x' },
    );
    expect([fromBench.deviceFeatures, fromBench.ownPipelineChecks, fromBench.matmulTflops]).toEqual([
      ['subgroups'],
      checks,
      null,
    ]);
    expect(fromBench.note).toContain('matmulTflops: not measured');
    expect(() => GpuRunRecord.parse({ ...r, matmulTflops: { x: 'fast' } })).toThrow();
  });

  it('leaves null every figure whose section wrote nothing, and says so', () => {
    const r = buildGpuRunRecord(
      outDir({
        'env.txt': ENV.replace(/^cpus.*$/m, 'cpus 2; no nvidia-smi'),
        'summary.txt': '== torch-paper: skipped (FULL_RUN_SECONDS spent)\n',
      }),
      { command: 'x' },
    );
    expect(r.device).toBe('no GPU (backend webgpu); 2 CPUs');
    expect(Object.values(r.paperStep)).toEqual([null, null, null, null, null]);
    expect([
      r.torchPaperStep.seconds,
      r.trainTokensPerSecond1x1536,
      r.torchTrainTokensPerSecond1x1536,
      r.gen128TokensPerSecond,
      r.torchGen128TokensPerSecond,
      r.peakGiB,
      r.adapterFeatures,
      ...Object.values(r.torchF32),
    ]).toEqual(Array(10).fill(null));
    expect(r.note).toContain('paperStep: not measured');
    expect(r.note).toContain('section torch-paper: skipped');
  });

  it('takes no paper step from a train section that ran other sizes', () => {
    const shrunk = { ...PAPER_CONFIG, agent: { ...PAPER_CONFIG.agent, envGroups: 2 } };
    const r = buildGpuRunRecord(outDir({ ...FULL, 'train-config.json': shrunk }), { command: 'x' });
    expect(r.paperStep.seconds).toBeNull();
    expect(r.note).toContain('not the paper step (2 env groups x 16');
    const cut = buildGpuRunRecord(outDir({ ...FULL, 'env.txt': ENV.replace('layers 24', 'layers 2') }), {
      command: 'x',
    });
    expect(cut.paperStep.seconds).toBeNull();
  });

  it('refuses a directory that is not full-run.sh output', () => {
    expect(() => buildGpuRunRecord(outDir({}), { command: 'x' })).toThrow(/env.txt/);
  });
});

describe('gpu-run-record: the schema', () => {
  const good = buildGpuRunRecord(outDir(FULL), { command: 'x' });
  it('accepts a built record and rejects a figure as text, a missing field, an unknown one and a bad date', () => {
    expect(GpuRunRecord.safeParse(good).success).toBe(true);
    expect(GpuRunRecord.safeParse({ ...good, peakGiB: '3 GiB' }).success).toBe(false);
    expect(GpuRunRecord.safeParse({ ...good, paperStep: { ...good.paperStep, seconds: undefined } }).success).toBe(
      false,
    );
    const { gen128TokensPerSecond: _, ...missing } = good;
    expect(GpuRunRecord.safeParse(missing).success).toBe(false);
    expect(GpuRunRecord.safeParse({ ...good, estimatedPeakGiB: 30 }).success).toBe(false);
    expect(GpuRunRecord.safeParse({ ...good, date: '28 Nov 2026' }).success).toBe(false);
  });
});

describe("gpu-runs-table: BENCHMARKS.md's table from the records", () => {
  it('puts one row per record between the markers, newest first, and keeps the text around them', () => {
    const older = buildGpuRunRecord(outDir(FULL), { command: 'x' });
    const newer = { ...older, date: '2026-12-09', commit: 'abcdef1', gen128TokensPerSecond: null, peakGiB: 2.5 };
    const runs = outDir({ '2026-12-08-1a2b3c4.json': older, '2026-12-09-abcdef1.json': newer });
    const table = renderGpuRunsTable(readGpuRuns(runs));
    const doc = `# B\n\ntext before\n\n${TABLE_BEGIN}\nold table\n${TABLE_END}\n\ntext after\n`;
    const out = replaceGpuRunsTable(doc, table);
    expect(out.startsWith('# B\n\ntext before\n\n')).toBe(true);
    expect(out.endsWith(`${TABLE_END}\n\ntext after\n`)).toBe(true);
    expect(out).not.toContain('old table');
    const rows = out.split('\n').filter((l) => /^\| 2026-/.test(l));
    expect(rows.map((l) => l.split(' | ')[1])).toEqual(['`abcdef1`', '`1a2b3c4`']);
    expect(rows[0]).toContain('| 2.50 |');
    expect(rows[0]).toContain('| - | 8,000 / 4,200 |'); // not measured: "-", never a number
    expect(rows[1]).toContain('| 3,000 | 8,000 / 4,200 |');
    expect(rows[1]).toContain('| 80.5 | 40.3 / 20.0 / 15.5 | 87,128 | 60.0 / 120.0 |');
    expect(rows[1]).toContain('f16, subgroups');
    expect(replaceGpuRunsTable(out, table)).toBe(out);
    expect(() => replaceGpuRunsTable('# no markers', table)).toThrow(/markers/);
  });

  it('names a record file that fails the schema', () => {
    const runs = outDir({ '2026-12-08-1a2b3c4.json': { date: '2026-12-08' } });
    expect(() => readGpuRuns(runs)).toThrow(/2026-12-08-1a2b3c4.json: not a GPU run record/);
  });

  it('BENCHMARKS.md holds the table that docs/gpu-runs gives', () => {
    const doc = readFileSync('BENCHMARKS.md', 'utf8');
    expect(replaceGpuRunsTable(doc, renderGpuRunsTable(readGpuRuns('docs/gpu-runs')))).toBe(doc);
  });
});
