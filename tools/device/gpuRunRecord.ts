// The record a GPU run leaves in docs/gpu-runs/<date>-<commit>.json (the fields of GpuRunRecord below), built
// from the files tools/device/full-run.sh writes into its $OUT, and checked with zod. A figure whose section did not
// run, failed before writing it, or ran at other sizes is null: nothing is estimated. `note` says, for each figure,
// which file and key it comes from, and which sections gave nothing.
//
// Where each field comes from ($OUT of full-run.sh):
//   date, commit            env.txt's first line ("date 2026-12-07T03:04:05Z; git 1a2b3c4; node v22...")
//   device                  env.txt's nvidia-smi line; without one, the WebGPU adapter of a bench JSON; else the CPUs
//   paperStep               train-metrics.jsonl's last step (timing_s/step, timing_s/gen, timing_s/update_actor,
//                           timing_s/update_critic, perf/total_num_tokens), only when train-config.json and env.txt
//                           describe the paper's step (8 env groups x 16, 5 turns of up to 400 tokens, 24 layers)
//   torchPaperStep          torch-paper.json (tools/bench/torch_step.py --paper): "paper bf16 step s"
//   trainTokensPerSecond1x1536      update-1536.json (tools/device/update-profile.ts --tokens 1536): 1536 / (forward
//                                   + backward + AdamW seconds, mean of 2 warm updates); else update-profile.json
//   torchTrainTokensPerSecond1x1536 torch-paper.json: "train 1x1536 bf16 tokens/s" (the same update in PyTorch)
//   gen128TokensPerSecond           bench-speed.json: results.model["qwen0.5b generate b128 tokens/s"]
//   torchGen128TokensPerSecond      torch-paper.json: "generate b128 bf16 tokens/s" (the same generate() workload)
//   torchF32                        torch-paper.json: the three PyTorch figures above in f32, for the f32 ratio
//   peakGiB                 bench-memory.json: the deepest measured "step" row (the largest phase of a step)
//   adapterFeatures         the `adapter.features` of bench-speed.json (else bench-matmul.json, bench-step.json)
//   deviceFeatures          (optional) what the webgpu backend's device got: selfcheck.json's device.features (else
//                           a bench JSON's webgpuDevice.features)
//   ownPipelineChecks       (optional) each f16 matmul mode's and the subgroup reduction's check: selfcheck.json's
//                           checks (else bench-matmul.json's matmulSelfChecks)
//   matmulTflops            (optional) selfcheck.json's timings: "<product> <m>x<n>x<k> <mode>" -> TFLOP/s
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';

const figure = z.number().finite().nonnegative().nullable();

export const GpuRunRecord = z.strictObject({
  /** The day the run started, UTC (YYYY-MM-DD). */
  date: z.string().regex(/^\d{4}-\d{2}-\d{2}$/),
  /** The short commit the run measured. */
  commit: z.string().regex(/^[0-9a-f]{7,40}$/),
  device: z.string().min(1),
  /** The command that ran, rerunnable. */
  command: z.string().min(1),
  paperStep: z.strictObject({
    seconds: figure,
    rolloutSeconds: figure,
    actorUpdateSeconds: figure,
    criticUpdateSeconds: figure,
    tokensTrained: figure,
  }),
  /** The paper step's work in PyTorch eager with bf16 autocast (as RAGEN trains), same GPU, same call. */
  torchPaperStep: z.strictObject({ seconds: figure }),
  trainTokensPerSecond1x1536: figure,
  torchTrainTokensPerSecond1x1536: figure,
  gen128TokensPerSecond: figure,
  torchGen128TokensPerSecond: figure,
  /** The PyTorch figures in f32 (no autocast), measured in the same torch_step.py call. */
  torchF32: z.strictObject({
    paperStepSeconds: figure,
    trainTokensPerSecond1x1536: figure,
    gen128TokensPerSecond: figure,
  }),
  peakGiB: figure,
  adapterFeatures: z.array(z.string()).nullable(),
  /** The optional features the webgpu backend's device got (src/model/webgpuDevice.ts). */
  deviceFeatures: z.array(z.string()).nullable().optional(),
  /** Each f16 matmul mode's check against exact products, and the subgroup reduction's (webgpuSelfCheck.ts). */
  ownPipelineChecks: z
    .array(
      z.strictObject({
        mode: z.string(),
        ok: z.boolean(),
        maxRelError: z.number().nullable(),
        reason: z.string().optional(),
      }),
    )
    .nullable()
    .optional(),
  /** TFLOP/s of qwen0.5b's large products in tiled f32 and each f16 mode that passed its check. */
  matmulTflops: z.record(z.string(), z.number().finite().nonnegative()).nullable().optional(),
  /** Where each figure comes from, and what was not measured and why. */
  note: z.string(),
});
export type GpuRunRecord = z.infer<typeof GpuRunRecord>;

/** The sizes the record reads: the paper's, or full-run.sh's FULL_RUN_TINY plumbing check. */
export interface RecordSizes {
  shape: string;
  genBatch: number;
  trainTokens: number;
}
export const PAPER_SIZES: RecordSizes = { shape: 'qwen0.5b', genBatch: 128, trainTokens: 1536 };
export const TINY_SIZES: RecordSizes = { shape: 'tiny', genBatch: 2, trainTokens: 64 };

export interface BuildOptions {
  command: string;
  sizes?: RecordSizes;
  /** FULL_RUN_TINY: take the train section's step whatever its config (a plumbing check, not the paper step). */
  tiny?: boolean;
}

/** The parts of full-run.sh's files the record reads; any of them may be missing (a section may write less). */
interface Adapter {
  features?: string[];
  description?: string;
  device?: string;
  vendor?: string;
}
interface BenchJson {
  results?: { model?: Record<string, unknown> };
  adapter?: Adapter;
  webgpuDevice?: { features?: string[] };
  matmulSelfChecks?: GpuRunRecord['ownPipelineChecks'];
}
interface SelfCheckJson {
  device?: { features?: string[] };
  checks?: GpuRunRecord['ownPipelineChecks'];
  timings?: { product: string; m: number; n: number; k: number; mode: string; tflops: number }[];
}
interface TorchJson {
  torch?: string;
  device?: string;
  results?: Record<string, unknown>;
}
interface ProfileJson {
  report?: { tokens: number; gradsS?: unknown; adamwS?: unknown }[];
}
interface MemoryJson {
  memory?: { phase: string; peakBytes: number; layers: number; extrapolatedFrom?: unknown }[];
}
interface RunConfigJson {
  agent?: { envGroups?: number; groupSize?: number; maxTurn?: number };
  rollout?: { maxNewTokens?: number };
}

/** The record of the full-run.sh output in `dir`, checked against the schema. */
export function buildGpuRunRecord(dir: string, opts: BuildOptions): GpuRunRecord {
  const sizes = opts.sizes ?? (opts.tiny ? TINY_SIZES : PAPER_SIZES);
  const notes: string[] = [];
  const file = (name: string) => path.join(dir, name);
  const json = <T>(name: string): T | null => {
    if (!existsSync(file(name))) return null;
    try {
      return JSON.parse(readFileSync(file(name), 'utf8')) as T;
    } catch (err) {
      notes.push(`${name}: unreadable (${(err as Error).message})`);
      return null;
    }
  };
  const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : null);

  const env = existsSync(file('env.txt')) ? readFileSync(file('env.txt'), 'utf8') : '';
  const started = /^date (\d{4}-\d{2}-\d{2})T/m.exec(env)?.[1];
  const commit = /; git ([0-9a-f]{7,40})\b/.exec(env)?.[1];
  if (!started || !commit)
    throw new Error(`${file('env.txt')}: no "date ...; git <commit>" line (is ${dir} full-run.sh's $OUT?)`);

  const benches = ['bench-speed.json', 'bench-matmul.json', 'bench-step.json'].map((name) => ({
    name,
    report: json<BenchJson>(name),
  }));
  const adapter = benches.find((b) => b.report?.adapter)?.report?.adapter;
  // Our own pipelines: the selfcheck section's file, else what the bench sections recorded.
  const selfcheck = json<SelfCheckJson>('selfcheck.json');
  const deviceFeatures =
    selfcheck?.device?.features ?? benches.find((b) => b.report?.webgpuDevice)?.report?.webgpuDevice?.features ?? null;
  const ownPipelineChecks =
    selfcheck?.checks ?? benches.find((b) => b.report?.matmulSelfChecks)?.report?.matmulSelfChecks ?? null;
  const matmulTflops = selfcheck?.timings?.length
    ? Object.fromEntries(selfcheck.timings.map((t) => [`${t.product} ${t.m}x${t.n}x${t.k} ${t.mode}`, t.tflops]))
    : null;
  if (!matmulTflops) notes.push('matmulTflops: not measured (no selfcheck.json timings)');

  // paperStep: the train section's last step, when it is the paper's.
  const paperStep = {
    seconds: null,
    rolloutSeconds: null,
    actorUpdateSeconds: null,
    criticUpdateSeconds: null,
    tokensTrained: null,
  } as GpuRunRecord['paperStep'];
  const rows = readJsonl(file('train-metrics.jsonl'));
  const config = json<RunConfigJson>('train-config.json');
  const layers = Number(/; layers (\d+);/.exec(env)?.[1] ?? NaN);
  const why = opts.tiny ? null : notPaperStep(config, layers);
  if (!rows.length) notes.push('paperStep: not measured (no train-metrics.jsonl step)');
  else if (why) notes.push(`paperStep: not the paper step (${why}), so null`);
  else {
    const last = rows[rows.length - 1];
    Object.assign(paperStep, {
      seconds: num(last['timing_s/step']),
      rolloutSeconds: num(last['timing_s/gen']),
      actorUpdateSeconds: num(last['timing_s/update_actor']),
      criticUpdateSeconds: num(last['timing_s/update_critic']),
      tokensTrained: num(last['perf/total_num_tokens']),
    });
    notes.push(
      `paperStep: train-metrics.jsonl step ${String(last.step)} of ${rows.length} (timing_s/step, /gen, /update_actor, ` +
        `/update_critic, perf/total_num_tokens)`,
    );
  }

  // PyTorch: torch_step.py --paper, bf16 autocast and f32.
  const torch = json<TorchJson>('torch-paper.json');
  const t = torch?.results ?? {};
  const torchFigure = (what: string, dtype: 'bf16' | 'f32') => num(t[what.replace('DT', dtype)]);
  const stepKey = 'paper DT step s',
    trainKey = `train 1x${sizes.trainTokens} DT tokens/s`,
    genKey = `generate b${sizes.genBatch} DT tokens/s`;
  if (torch) {
    notes.push(
      `torch: torch-paper.json (PyTorch ${torch.torch} ${torch.device}; "${stepKey}", "${trainKey}", "${genKey}" ` +
        'with DT = bf16 autocast, f32 in torchF32)',
    );
    const torchTokens = num(t['paper bf16 train tokens']);
    if (paperStep.tokensTrained !== null && torchTokens !== null && torchTokens !== paperStep.tokensTrained) {
      notes.push(`torch trained ${torchTokens} tokens where the tfjs step trained ${paperStep.tokensTrained}`);
    }
  } else notes.push('torch: not measured (no torch-paper.json)');

  // tfjs generation at the batch, and an update at the token count.
  const speed = benches[0].report;
  const genKeyTfjs = `${sizes.shape} generate b${sizes.genBatch} tokens/s`;
  const gen = num(speed?.results?.model?.[genKeyTfjs]);
  notes.push(
    gen === null
      ? `gen128: not measured (no "${genKeyTfjs}" in bench-speed.json)`
      : `gen128: bench-speed.json "${genKeyTfjs}"`,
  );
  const profile = ['update-1536.json', 'update-profile.json']
    .map((name) => ({ name, row: json<ProfileJson>(name)?.report?.find((r) => r.tokens === sizes.trainTokens) }))
    .find((p) => p.row);
  const [grads, adamw] = [num(profile?.row?.gradsS), num(profile?.row?.adamwS)];
  const updateSeconds = grads !== null && adamw !== null ? grads + adamw : null;
  const train = updateSeconds ? sizes.trainTokens / updateSeconds : null;
  notes.push(
    train === null
      ? `train 1x${sizes.trainTokens}: not measured (no update-1536.json row)`
      : `train 1x${sizes.trainTokens}: ${profile!.name}, ${sizes.trainTokens} / (gradsS + adamwS)`,
  );

  // Peak tensor memory: the deepest measured step row (the largest phase).
  const memory = json<MemoryJson>('bench-memory.json')?.memory ?? [];
  const step = memory.filter((r) => r.phase === 'step' && !r.extrapolatedFrom).sort((a, b) => b.layers - a.layers)[0];
  const peakGiB = step ? step.peakBytes / 2 ** 30 : null;
  notes.push(
    step
      ? `peakGiB: bench-memory.json "step" row, ${step.layers} layers`
      : 'peakGiB: not measured (no bench-memory.json step row)',
  );

  notes.push(...failedSections(file('summary.txt')));
  if (opts.tiny) notes.unshift("FULL_RUN_TINY: tiny sizes, a plumbing check; no figure here is the paper's");

  return GpuRunRecord.parse({
    date: started,
    commit,
    device: deviceOf(env, adapter),
    command: opts.command,
    paperStep,
    torchPaperStep: { seconds: torchFigure(stepKey, 'bf16') },
    trainTokensPerSecond1x1536: train,
    torchTrainTokensPerSecond1x1536: torchFigure(trainKey, 'bf16'),
    gen128TokensPerSecond: gen,
    torchGen128TokensPerSecond: torchFigure(genKey, 'bf16'),
    torchF32: {
      paperStepSeconds: torchFigure(stepKey, 'f32'),
      trainTokensPerSecond1x1536: torchFigure(trainKey, 'f32'),
      gen128TokensPerSecond: torchFigure(genKey, 'f32'),
    },
    peakGiB,
    adapterFeatures: adapter?.features ?? null,
    deviceFeatures,
    ownPipelineChecks,
    matmulTflops,
    note: notes.join('; '),
  });
}

/** Why a run's train section is not the paper's step (null when it is). */
function notPaperStep(config: RunConfigJson | null, layers: number): string | null {
  if (!config) return 'no train-config.json';
  const a = config.agent ?? {};
  const seen = `${a.envGroups} env groups x ${a.groupSize}, ${a.maxTurn} turns of up to ${config.rollout?.maxNewTokens} tokens`;
  if (a.envGroups !== 8 || a.groupSize !== 16 || a.maxTurn !== 5 || config.rollout?.maxNewTokens !== 400) return seen;
  if (layers !== 24) return `${Number.isNaN(layers) ? 'unknown' : layers} layers`;
  return null;
}

function deviceOf(env: string, adapter?: { description?: string; device?: string; vendor?: string }): string {
  const line = /^cpus (\d+); (.*)$/m.exec(env);
  const cpus = line ? `${line[1]} CPUs` : 'CPUs unknown';
  if (line && line[2] !== 'no nvidia-smi') return `${line[2]}; ${cpus}`;
  const name = adapter?.description || adapter?.device || adapter?.vendor;
  const backend = /^backend (\S+);/m.exec(env)?.[1] ?? '?';
  return name ? `WebGPU adapter ${name}; ${cpus}` : `no GPU (backend ${backend}); ${cpus}`;
}

function readJsonl(file: string): Record<string, unknown>[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

/** summary.txt's sections that failed or were skipped, as notes. */
function failedSections(file: string): string[] {
  if (!existsSync(file)) return ['summary.txt: missing'];
  const out: string[] = [];
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const m = /^== (\S+): (exit [1-9]\d*.*|skipped.*)$/.exec(line);
    if (m) out.push(`section ${m[1]}: ${m[2]}`);
  }
  return out;
}

/** docs/gpu-runs/<date>-<commit>.json, or -2, -3 ... when a run of the same day and commit is there already. */
export function recordPath(dir: string, record: Pick<GpuRunRecord, 'date' | 'commit'>): string {
  const base = `${record.date}-${record.commit}`;
  let candidate = path.join(dir, `${base}.json`);
  for (let n = 2; existsSync(candidate); n++) candidate = path.join(dir, `${base}-${n}.json`);
  return candidate;
}
