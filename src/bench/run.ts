// The sections of `ragen bench`, run in order, each printing its table as it finishes; what they measured comes back
// for the JSON report. src/cli/bench.ts reads the flags into a BenchPlan and writes the report.
//
// Sections: envs (environment operations/s, envs.ts), model (tfjs training and generated tokens/s, with the peak
// tensor memory of one update / one generate call, model.ts), torch (the same throughput in PyTorch,
// tools/bench/torch_bench.py, run in the same invocation so that both see the same machine load), step (one full
// StarPO-S training step of tiny presets split into rollout / scoring / update, with its peak tensor memory, step.ts)
// and, when model and torch both ran, ratio (tfjs / PyTorch). With step and torch both in --only, torch-step follows:
// the same work as each measured step (its rollout's rows, turns, prefill and decode tokens, its trained sequences,
// its PPO batching, critic and reference) redone in plain PyTorch (torchStep.ts, tools/bench/torch_step.py), with
// per-part ratios in ratio. All run by default, in that order (step adds well under a minute on wasm with the two
// default presets). Three more run only with --only: memory (peak tensor bytes per phase of a step at a model shape,
// memory.ts), rollout (batched generation tokens/s at batch 1, 16, 128, rollout.ts) and matmul (each matmul of an
// update at a model shape, tfjs's own matmul and on webgpu the tiled WGSL kernel, next to PyTorch on the same shapes,
// matmul.ts). A section that fails is reported and the others still run.
import os from 'node:os';
import { assertNoGpuError, type BackendName } from '../model/backend';
import { RAGEN_LORA } from '../model/lora';
import {
  describeMatmulFeatures,
  webgpuAdapterCapabilities,
  type WebgpuAdapterCapabilities,
} from '../model/webgpuAdapter';
import { benchEnvs } from './envs';
import {
  addTorchRows,
  benchMatmul,
  matmulCases,
  matmulSelfChecks,
  matmulTable,
  matmulTorchSpec,
  type MatmulRow,
} from './matmul';
import { webgpuDeviceFacts, type WebgpuDeviceFacts } from '../model/webgpuDevice';
import type { MatMulModeCheck } from '../model/webgpuSelfCheck';
import { benchMemory, memoryRowsTable, type BenchMemoryOptions, type MemoryRow } from './memory';
import { benchModel, benchShape, benchSpec, runTorchBench, wasmFailure, type BenchShapeName } from './model';
import { benchRollout } from './rollout';
import type { GenEngine } from './generateEngine';
import { benchStep, type BenchStepOptions } from './step';
import { stepRatios, torchStepSpec, type StepRunWork } from './torchStep';

export const SECTIONS = ['envs', 'model', 'torch', 'step', 'memory', 'rollout', 'matmul'] as const;
export type Section = (typeof SECTIONS)[number];
/** What runs without --only: everything but memory, rollout and matmul (step with bandit-tiny and frozenlake-tiny adds
 *  about 45 s on wasm here; memory, rollout and matmul at qwen0.5b's shape take minutes, so they run only when asked
 *  for). */
export const DEFAULT_SECTIONS: readonly Section[] = SECTIONS.filter(
  (s) => s !== 'memory' && s !== 'rollout' && s !== 'matmul',
);

/** Everything a run of the sections needs, checked (src/cli/bench.ts reads it from the flags). */
export interface BenchPlan {
  sections: readonly Section[];
  backend: BackendName;
  shapes: readonly BenchShapeName[];
  seconds: number;
  genBatches?: number[];
  /** What runs the model section's generate rows and the rollout section (`--gen-engine`; generateEngine.ts). */
  genEngine: GenEngine;
  step: Pick<BenchStepOptions, 'presets' | 'repeats' | 'overrides' | 'modelDir' | 'helperFor'> & {
    repeats: number;
    presets: readonly string[];
  };
  /** The memory section's options (the matmul section's B x T too); `tokens` as the user wrote it, for the heading. */
  memory: Pick<
    BenchMemoryOptions,
    'batch' | 'seqLen' | 'layers' | 'rollouts' | 'phases' | 'checkpointing' | 'perVariableAdamW' | 'vocab'
  > & { tokens: string; lora: boolean };
  rollout: { batches: number[]; layers?: number };
  torch: { python: string; threads: number; device: string };
}

/** What the sections measured, for the JSON report. */
export interface BenchOutcome {
  machine: string;
  results: Partial<Record<Section | 'torch-step' | 'ratio', Record<string, number>>>;
  notes: Partial<Record<Section, string[]>>;
  /** Each failed section's message. */
  errors: Partial<Record<Section | 'torch-step', string>>;
  torch?: { torch: string; device: string; threads: number };
  /** webgpu: the adapter's identity, features and limits. */
  adapter: WebgpuAdapterCapabilities | null;
  /** webgpu: the features the backend's device got (webgpuDevice.ts), and the adapter's subgroup matrix shapes. */
  webgpuDevice?: WebgpuDeviceFacts | null;
  /** webgpu matmul section: each f16 mode's check against exact products (webgpuSelfCheck.ts). */
  matmulSelfChecks?: MatMulModeCheck[] | null;
  memory?: MemoryRow[];
  matmul?: MatmulRow[];
  /** What the step section's steps did, as torch-step redid it. */
  stepWork: StepRunWork[];
}

/** Runs the plan's sections in order, printing through `out.log` (a bug's stack through `out.error`). */
export async function runBench(plan: BenchPlan, out: Pick<Console, 'log' | 'error'>): Promise<BenchOutcome> {
  const { backend, shapes, seconds, genBatches, torch: torchOptions } = plan;
  const wanted = plan.sections;
  const { presets, repeats: stepRepeats } = plan.step;
  const memoryOptions = plan.memory;
  const machine = `${os.cpus().length} x ${os.cpus()[0]?.model ?? 'cpu'}, ${gib(os.totalmem())} RAM, node ${process.version}`;
  out.log(`ragen bench on ${machine}`);
  const outcome: BenchOutcome = { machine, results: {}, notes: {}, errors: {}, adapter: null, stepWork: [] };
  const { results, notes, errors, stepWork } = outcome;
  const printTable = (title: string, rows: Record<string, number>) =>
    tableLines(title, rows).forEach((line) => out.log(line));
  const noteFor = (section: Section) => (line: string) => {
    (notes[section] ??= []).push(line);
    out.log(`  ${section}: ${line}`);
  };
  const torchRun = (spec: Parameters<typeof runTorchBench>[0]['spec']) =>
    runTorchBench({
      spec,
      python: torchOptions.python,
      threads: torchOptions.threads,
      device: torchOptions.device,
      progress: (line) => out.log(`  ${line}`),
    });

  for (const section of wanted) {
    try {
      if (section === 'envs') {
        results.envs = await benchEnvs({ seconds });
        printTable('envs (operations/s)', results.envs);
      } else if (section === 'model') {
        out.log(`\nmodel: tfjs ${backend}, shapes ${shapes.join(', ')}`);
        results.model = await benchModel({
          backend,
          shapes,
          seconds,
          genBatches,
          genEngine: plan.genEngine,
          note: noteFor('model'),
        });
        printTable(`model (tfjs ${backend}, tokens/s; peak bytes / tensors: first warm-up repetition)`, results.model);
      } else if (section === 'step') {
        out.log(`\nstep: tfjs ${backend}, presets ${presets.join(', ')}, ${stepRepeats} timed step(s) after 1 warm-up`);
        results.step = await benchStep({
          ...plan.step,
          backend,
          note: noteFor('step'),
          onWork: wanted.includes('torch') ? (run) => stepWork.push(run) : undefined,
        });
        printTable(
          `step (tfjs ${backend}; seconds per training step, mean of ${stepRepeats}; peak bytes / tensors: warm-up step)`,
          results.step,
        );
      } else if (section === 'rollout') {
        out.log(`\nrollout: tfjs ${backend}, shapes ${shapes.join(', ')}, batches ${plan.rollout.batches.join(', ')}`);
        results.rollout = {};
        for (const shape of shapes) {
          Object.assign(
            results.rollout,
            await benchRollout({
              backend,
              shape: benchShape(shape),
              batches: plan.rollout.batches,
              layers: plan.rollout.layers,
              engine: plan.genEngine,
              note: noteFor('rollout'),
            }),
          );
        }
        printTable(
          `rollout (tfjs ${backend}; generated tokens/s of one batched call, prefill included)`,
          results.rollout,
        );
      } else if (section === 'matmul') {
        const tokens = `${memoryOptions.batch}x${memoryOptions.seqLen}`;
        out.log(
          `\nmatmul: tfjs ${backend} and PyTorch (${torchOptions.device}), shapes ${shapes.join(', ')}, tokens ${tokens}`,
        );
        const matmulRows: MatmulRow[] = (outcome.matmul = []);
        for (const name of shapes) {
          const shape = benchShape(name);
          const rows = await benchMatmul({
            backend,
            shape,
            batch: memoryOptions.batch,
            seqLen: memoryOptions.seqLen,
            seconds,
            note: noteFor('matmul'),
          });
          const cases = matmulCases(shape, memoryOptions.batch, memoryOptions.seqLen);
          try {
            const torch = await torchRun(matmulTorchSpec(cases, seconds));
            torch.notes.forEach(noteFor('matmul'));
            outcome.torch ??= { torch: torch.torch, device: torch.device, threads: torch.threads };
            matmulRows.push(...addTorchRows(rows, cases, shape.name, tokens, torch.results, torch.device));
          } catch (err) {
            matmulRows.push(...rows); // the tfjs rows stand; the section is reported as failed
            results.matmul = matmulTable(matmulRows);
            throw new Error(`the PyTorch side failed: ${(err as Error).message}`, { cause: err });
          }
        }
        results.matmul = matmulTable(matmulRows);
        printTable(
          `matmul (tfjs ${backend}; GFLOP/s of each product alone, median; impl/torch: speed ratio to PyTorch, above 1 = faster; ` +
            "update matmuls ms: the sum over an update's products)",
          results.matmul,
        );
      } else if (section === 'memory') {
        out.log(`\nmemory: tfjs ${backend}, shapes ${shapes.join(', ')}, tokens ${memoryOptions.tokens}`);
        const memoryRows: MemoryRow[] = (outcome.memory = []);
        const { tokens: _text, lora, ...options } = memoryOptions;
        for (const shape of shapes) {
          memoryRows.push(
            ...(await benchMemory({
              ...options,
              backend,
              shape: benchShape(shape),
              lora: lora ? RAGEN_LORA : null,
              note: (line) => out.log(`  memory: ${line}`),
            })),
          );
        }
        results.memory = memoryRowsTable(memoryRows);
        printTable(
          `memory (tfjs ${backend}; peak tensor bytes per phase; "extrapolated" rows are computed from the two largest measured depths)`,
          results.memory,
        );
      } else {
        out.log(
          `\ntorch: ${torchOptions.python} tools/bench/torch_bench.py, ${torchOptions.threads} thread(s), ${torchOptions.device}`,
        );
        const torch = await torchRun(benchSpec(shapes, seconds, genBatches));
        torch.notes.forEach(noteFor('torch'));
        outcome.torch = { torch: torch.torch, device: torch.device, threads: torch.threads };
        results.torch = torch.results;
        printTable(
          `torch (PyTorch ${torch.torch}, ${torch.device}, ${torch.threads} thread(s), tokens/s)`,
          results.torch,
        );
      }
      // A command WebGPU refused ran on nothing: the section's numbers are not those of the work it names.
      assertNoGpuError(`in the ${section} section`);
    } catch (err) {
      errors[section] = wasmFailure(err) ?? (err as Error).message;
      out.log(`\n${section}: FAILED: ${errors[section]}`);
      if (err instanceof TypeError || err instanceof ReferenceError) out.error(err); // a bug: keep its stack
    }
  }

  // After the sections: the step section's steps redone in PyTorch, on the same machine.
  if (stepWork.length) {
    try {
      out.log(
        `\ntorch-step: ${torchOptions.python} tools/bench/torch_bench.py, ${torchOptions.threads} thread(s), ${torchOptions.device}: ` +
          "the step section's work in PyTorch (no shared-prefix prefill, f32)",
      );
      const torch = await torchRun({ steps: stepWork.map(torchStepSpec) });
      torch.notes.forEach(noteFor('torch'));
      outcome.torch ??= { torch: torch.torch, device: torch.device, threads: torch.threads };
      results['torch-step'] = torch.results;
      printTable(
        `torch-step (PyTorch ${torch.torch}, ${torch.device}; seconds per training step, the same work as the step section's)`,
        torch.results,
      );
    } catch (err) {
      errors['torch-step'] = (err as Error).message;
      out.log(`\ntorch-step: FAILED: ${(err as Error).message}`);
    }
  }

  // After the sections: the webgpu backend (and Dawn) is up only if one of them ran on it.
  if (backend === 'webgpu' && (wanted.includes('model') || wanted.includes('step') || wanted.includes('matmul'))) {
    outcome.adapter = await webgpuAdapterCapabilities().catch(() => null);
    outcome.webgpuDevice = webgpuDeviceFacts();
    if (wanted.includes('matmul')) outcome.matmulSelfChecks = matmulSelfChecks();
    const adapter = outcome.adapter;
    if (adapter)
      out.log(
        `\nwebgpu adapter: ${adapter.description || adapter.device || adapter.vendor}: ${describeMatmulFeatures(adapter)}`,
      );
  }
  if ((results.model && results.torch) || (results.step && results['torch-step'])) {
    results.ratio = {
      ...(results.model && results.torch ? ratios(results.model, results.torch) : {}),
      ...(results.step && results['torch-step'] ? stepRatios(results.step, results['torch-step']) : {}),
    };
    printTable(`ratio (tfjs ${backend} / PyTorch; above 1 = tfjs faster)`, results.ratio);
  }
  return outcome;
}

/** "tiny train tokens/s" in both -> "tiny train tfjs/torch" = tfjs / torch. */
function ratios(tfjs: Record<string, number>, torch: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [key, value] of Object.entries(tfjs)) {
    if (key.endsWith(' tokens/s') && torch[key] > 0)
      out[key.replace(/ tokens\/s$/, ' tfjs/torch')] = value / torch[key];
  }
  return out;
}

/** A section's table as printed: a blank line, the title, then one aligned line per figure. */
function tableLines(title: string, rows: Record<string, number>): string[] {
  const lines = [`\n${title}`];
  if (!Object.keys(rows).length) return [...lines, '  (nothing measured)'];
  const width = Math.max(...Object.keys(rows).map((k) => k.length));
  for (const [name, value] of Object.entries(rows)) {
    let shown = value >= 100 ? Math.round(value).toLocaleString('en-US') : value.toPrecision(3);
    if (name.endsWith(' bytes')) shown += ` (${(value / 1024 ** 2).toFixed(value < 10 * 1024 ** 2 ? 2 : 0)} MiB)`;
    lines.push(`  ${name.padEnd(width)}  ${shown}`);
  }
  return lines;
}

const gib = (bytes: number) => `${(bytes / 1024 ** 3).toFixed(0)} GiB`;
