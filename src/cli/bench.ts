// `ragen bench`: the one place where performance is measured. Prints a table (and JSON with --json) so the figures
// in BENCHMARKS.md come from a command anyone can rerun.
//
// Sections: envs (environment operations/s), model (tfjs training and generated tokens/s, with the peak tensor memory
// of one update / one generate call, bench-model.ts), torch (the same throughput in PyTorch, tools/bench/torch_bench.py,
// run in the same invocation so that both see the same machine load), step (one full StarPO-S training step of tiny
// presets split into rollout / scoring / update, with its peak tensor memory, bench-step.ts) and, when model and
// torch both ran, ratio (tfjs / PyTorch). With step and torch both in --only, torch-step follows: the same work as
// each measured step (its rollout's rows, turns, prefill and decode tokens, its trained sequences, its PPO
// batching, critic and reference) redone in plain PyTorch (bench-torch-step.ts, tools/bench/torch_step.py), with
// per-part ratios in ratio. All run by default, in that order (step adds well under a minute on wasm
// with the two default presets). Two more run only with --only: memory (peak tensor bytes per phase of a step at a
// model shape, bench-memory.ts), rollout (batched generation tokens/s at batch 1, 16, 128, bench-rollout.ts) and
// matmul (each matmul of an update at a model shape, tfjs's own matmul and on webgpu the tiled WGSL kernel, next to
// PyTorch on the same shapes, bench-matmul.ts). A section that fails is reported, the others still run, and the
// command exits non-zero.
import type { Command } from 'commander';
import * as fs from 'node:fs';
import { checkOutputFile, writeFileAtomic } from '../node/safeWrite';
import { FLAG_LIMITS, intFlag, intListFlag } from './flags';
import os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { assertNoGpuError, BACKEND_NAMES, isBackendName } from '../model/backend';
import { ConfigError } from '../starpo/config';
import { BENCH_SHAPE_NAMES, benchModel, benchShape, benchSpec, runTorchBench, wasmFailure } from './bench-model';
import { RAGEN_LORA } from '../model/lora';
import { MEMORY_OPTION_HELP, memoryRowsTable, parseMemoryOptions, benchMemory, type MemoryRow } from './bench-memory';
import { DEFAULT_ROLLOUT_BATCHES, benchRollout } from './bench-rollout';
import { benchEnvs } from './bench-envs';
import { DEFAULT_STEP_PRESETS, benchStep, benchStepConfig, stepPresetNames } from './bench-step';
import { stepRatios, torchStepSpec, type StepRunWork } from './bench-torch-step';
import { workersFlag } from './helperThread';
import { UsageError } from './usage';
import { modelDirFor } from './modelDir';
import { addTorchRows, benchMatmul, matmulCases, matmulTable, matmulTorchSpec, type MatmulRow } from './bench-matmul';
import { describeMatmulFeatures, webgpuAdapterCapabilities, type WebgpuAdapterCapabilities } from '../model/webgpuAdapter';

const SECTIONS = ['envs', 'model', 'torch', 'step', 'memory', 'rollout', 'matmul'] as const;

const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** The fair PyTorch peer is a current release (scripts/setup.sh puts torch 2.13 CPU in .venv-hf); Debian's
 *  python3-torch 1.13 is several times slower and only a fallback. */
function defaultTorchPython(): string {
  const venv = path.join(REPO_ROOT, '.venv-hf', 'bin', 'python');
  return fs.existsSync(venv) ? venv : '/usr/bin/python3';
}
type Section = (typeof SECTIONS)[number];
/** What runs without --only: everything but memory, rollout and matmul (step with bandit-tiny and frozenlake-tiny adds
 *  about 45 s on wasm here; memory, rollout and matmul at qwen0.5b's shape take minutes, so they run only when asked
 *  for). */
const DEFAULT_SECTIONS: readonly Section[] = SECTIONS.filter((s) => s !== 'memory' && s !== 'rollout' && s !== 'matmul');

interface BenchOptions {
  only: string;
  seconds: string;
  json?: string;
  backend: string;
  shapes: string;
  python: string;
  torchThreads: string;
  force?: boolean;
  torchDevice: string;
  presets: string;
  stepRepeats: string;
  stepSet: string[];
  workers: string;
  tokens: string;
  layers?: string;
  rollouts: string;
  phases?: string;
  checkpointing: string;
  adamw: string;
  lora?: boolean;
  vocab?: string;
  rolloutBatches: string;
  rolloutLayers?: string;
  genBatches?: string;
}

export function registerBench(program: Command): void {
  program
    .command('bench')
    .description('measure environment and model throughput on this machine, next to a PyTorch baseline, and time a training step')
    .option('--only <sections>', `comma-separated subset of: ${SECTIONS.join(', ')}`, DEFAULT_SECTIONS.join(','))
    .option('--seconds <s>', 'least time spent timing each measurement (after warm-up)', '1')
    .option('--json <file>', 'also write the results as JSON to this file')
    .option('--force', 'replace an existing --json file')
    .option('--backend <name>', 'tfjs backend of the model and step sections: wasm, cpu or webgpu (in Node without a GPU, run ' +
      'with VK_ICD_FILENAMES=/usr/lib/chromium/vk_swiftshader_icd.json: a software adapter, for correctness only)', 'wasm')
    .option('--shapes <names>', `model shapes, comma-separated: ${BENCH_SHAPE_NAMES.join(', ')}`, 'tiny,qwen0.5b')
    .option('--python <path>', 'interpreter with torch for the baseline (default: .venv-hf/bin/python, the current torch ' +
      'that scripts/setup.sh installs, else Debian\'s /usr/bin/python3 with its older torch 1.13)', defaultTorchPython())
    .option('--torch-threads <n>', 'torch.set_num_threads of the baseline (tfjs wasm/cpu use 1 thread in Node)', '1')
    .option('--torch-device <device>', 'torch device of the baseline: cpu or cuda', 'cpu')
    .option('--presets <names>', `presets of the step section, comma-separated: ${stepPresetNames().join(', ')} ` +
      '(sokoban-qwen with --step-set model=DIR)',
      DEFAULT_STEP_PRESETS.join(','))
    .option('--step-repeats <n>', 'timed training steps per preset in the step section (after one untimed warm-up step)', '2')
    .option('--step-set <key=value>', 'config override for the step section\'s presets, as `ragen train --set` (repeatable), ' +
      'e.g. --step-set agent.envGroups=2 --step-set agent.trainEnvs.0.nGroups=2', (v: string, acc: string[]) => [...acc, v], [])
    .option('--gen-batches <n,...>', 'extra generate() batch sizes of the model and torch sections, for every shape ' +
      '(default: 16,128 for qwen0.5b, none for the tiny shapes; "" for none)')
    .option('--workers <n>', 'cores per training step in the step section, as `ragen train --workers`: 1, 2 or auto', 'auto')
    .option('--tokens <BxT>', MEMORY_OPTION_HELP.tokens, '1x1536')
    .option('--layers <n,...>', MEMORY_OPTION_HELP.layers)
    .option('--rollouts <n>', MEMORY_OPTION_HELP.rollouts, '1')
    .option('--phases <names>', MEMORY_OPTION_HELP.phases)
    .option('--checkpointing <on|off>', MEMORY_OPTION_HELP.checkpointing, 'on')
    .option('--adamw <layout>', MEMORY_OPTION_HELP.adamw, 'auto')
    .option('--lora', MEMORY_OPTION_HELP.lora)
    .option('--vocab <n>', MEMORY_OPTION_HELP.vocab)
    .option('--rollout-batches <n,...>', 'rollout section: rows generated together, env groups of 16 sharing a prompt',
      DEFAULT_ROLLOUT_BATCHES.join(','))
    .option('--rollout-layers <n>', "rollout section: decoder layers of the model (default: the shape's own)")
    .action(async (opts: BenchOptions) => {
      const wanted = parseList(opts.only, 'bench section', SECTIONS) as Section[];
      const shapes = parseList(opts.shapes, 'model shape', BENCH_SHAPE_NAMES);
      const presets = parseList(opts.presets, 'step preset', stepPresetNames());
      const workers = workersFlag(opts.workers);
      const genBatches = intListFlag(opts.genBatches, '--gen-batches', 1, FLAG_LIMITS.benchBatch);
      const stepRepeats = intFlag(opts.stepRepeats, '--step-repeats', 1, FLAG_LIMITS.stepRepeats)!;
      const seconds = Number(opts.seconds);
      if (!(seconds > 0) || !Number.isFinite(seconds)) {
        throw new UsageError(`--seconds must be a positive number, got '${opts.seconds}'`);
      }
      if (seconds > FLAG_LIMITS.benchSeconds) throw new UsageError(`--seconds must be at most ${FLAG_LIMITS.benchSeconds}, got '${opts.seconds}'`);
      if (opts.json !== undefined) {
        try {
          checkOutputFile('--json', opts.json, { force: !!opts.force }); // before minutes of measuring
        } catch (err) {
          throw new UsageError((err as Error).message);
        }
      }
      if (!isBackendName(opts.backend)) {
        throw new UsageError(`unknown backend '${opts.backend}' (expected: ${BACKEND_NAMES.join(', ')})`);
      }
      const backend = opts.backend;
      if (wanted.includes('step')) {
        // Every preset's config (with --step-set) and warm start are checked before any section runs.
        for (const preset of presets) {
          try {
            modelDirFor(benchStepConfig(preset, { backend, repeats: stepRepeats, overrides: opts.stepSet }));
          } catch (err) {
            if (err instanceof ConfigError || err instanceof UsageError) {
              const hint = preset === 'sokoban-qwen' && !opts.stepSet.some((kv) => kv.startsWith('model')) ? ' (here: --step-set model=DIR)' : '';
              throw new UsageError(`step preset '${preset}': ${err.message}${hint}`);
            }
            throw err;
          }
        }
      } else if (opts.stepSet.length) {
        throw new UsageError('--step-set applies to the step section, which is not in --only');
      }
      const memoryOptions = parseMemoryOptions(opts);   // checked before any section runs
      let memoryRows: MemoryRow[] | undefined;
      let matmulRows: MatmulRow[] | undefined;
      const rolloutBatches = intListFlag(opts.rolloutBatches, '--rollout-batches', 1, FLAG_LIMITS.benchBatch)!;
      if (rolloutBatches.length === 0) throw new UsageError('--rollout-batches must list at least one batch size');
      const rolloutLayers = intFlag(opts.rolloutLayers, '--rollout-layers', 1, FLAG_LIMITS.benchLayers);
      const torchThreads = intFlag(opts.torchThreads, '--torch-threads', 1, FLAG_LIMITS.torchThreads)!;

      const machine = `${os.cpus().length} x ${os.cpus()[0]?.model ?? 'cpu'}, ${gib(os.totalmem())} RAM, node ${process.version}`;
      console.log(`ragen bench on ${machine}`);
      const results: Partial<Record<Section | 'torch-step' | 'ratio', Record<string, number>>> = {};
      const notes: Partial<Record<Section, string[]>> = {};
      const errors: Partial<Record<Section | 'torch-step', string>> = {};
      const stepWork: StepRunWork[] = [];   // what the step section's steps did, for torch-step
      let torchInfo: { torch: string; device: string; threads: number } | undefined;
      let adapter: WebgpuAdapterCapabilities | null = null;
      const noteFor = (section: Section) => (line: string) => {
        (notes[section] ??= []).push(line);
        console.log(`  ${section}: ${line}`);
      };

      for (const section of wanted) {
        try {
          if (section === 'envs') {
            results.envs = await benchEnvs({ seconds });
            printTable('envs (operations/s)', results.envs);
          } else if (section === 'model') {
            console.log(`\nmodel: tfjs ${backend}, shapes ${shapes.join(', ')}`);
            results.model = await benchModel({ backend, shapes, seconds, genBatches, note: noteFor('model') });
            printTable(`model (tfjs ${backend}, tokens/s; peak bytes / tensors: first warm-up repetition)`, results.model);
          } else if (section === 'step') {
            console.log(`\nstep: tfjs ${backend}, presets ${presets.join(', ')}, ${stepRepeats} timed step(s) after 1 warm-up`);
            results.step = await benchStep({
              backend, presets, repeats: stepRepeats, overrides: opts.stepSet, note: noteFor('step'), workers,
              onWork: wanted.includes('torch') ? (run) => stepWork.push(run) : undefined,
            });
            printTable(`step (tfjs ${backend}; seconds per training step, mean of ${stepRepeats}; peak bytes / tensors: warm-up step)`, results.step);
          } else if (section === 'rollout') {
            console.log(`\nrollout: tfjs ${backend}, shapes ${shapes.join(', ')}, batches ${rolloutBatches.join(', ')}`);
            results.rollout = {};
            for (const shape of shapes) {
              Object.assign(results.rollout, await benchRollout({
                backend, shape: benchShape(shape), batches: rolloutBatches, layers: rolloutLayers, note: noteFor('rollout'),
              }));
            }
            printTable(`rollout (tfjs ${backend}; generated tokens/s of one batched call, prefill included)`, results.rollout);
          } else if (section === 'matmul') {
            const tokens = `${memoryOptions.batch}x${memoryOptions.seqLen}`;
            console.log(`\nmatmul: tfjs ${backend} and PyTorch (${opts.torchDevice}), shapes ${shapes.join(', ')}, tokens ${tokens}`);
            matmulRows = [];
            for (const name of shapes) {
              const shape = benchShape(name);
              const rows = await benchMatmul({ backend, shape, batch: memoryOptions.batch, seqLen: memoryOptions.seqLen, seconds, note: noteFor('matmul') });
              const cases = matmulCases(shape, memoryOptions.batch, memoryOptions.seqLen);
              try {
                const torch = await runTorchBench({
                  spec: matmulTorchSpec(cases, seconds), python: opts.python, threads: torchThreads, device: opts.torchDevice,
                  progress: (line) => console.log(`  ${line}`),
                });
                torch.notes.forEach(noteFor('matmul'));
                torchInfo ??= { torch: torch.torch, device: torch.device, threads: torch.threads };
                matmulRows.push(...addTorchRows(rows, cases, shape.name, tokens, torch.results, torch.device));
              } catch (err) {
                matmulRows.push(...rows);   // the tfjs rows stand; the section is reported as failed
                results.matmul = matmulTable(matmulRows);
                throw new Error(`the PyTorch side failed: ${(err as Error).message}`);
              }
            }
            results.matmul = matmulTable(matmulRows);
            printTable(`matmul (tfjs ${backend}; GFLOP/s of each product alone, median; impl/torch: speed ratio to PyTorch, above 1 = faster; ` +
              'update matmuls ms: the sum over an update\'s products)', results.matmul);
          } else if (section === 'memory') {
            console.log(`\nmemory: tfjs ${backend}, shapes ${shapes.join(', ')}, tokens ${opts.tokens}`);
            memoryRows = [];
            for (const shape of shapes) {
              memoryRows.push(...await benchMemory({ ...memoryOptions, backend, shape: benchShape(shape), lora: opts.lora ? RAGEN_LORA : null,
                note: (line) => console.log(`  memory: ${line}`) }));
            }
            results.memory = memoryRowsTable(memoryRows);
            printTable(`memory (tfjs ${backend}; peak tensor bytes per phase; "extrapolated" rows are computed from the two largest measured depths)`, results.memory);
          } else {
            console.log(`\ntorch: ${opts.python} tools/bench/torch_bench.py, ${torchThreads} thread(s), ${opts.torchDevice}`);
            const torch = await runTorchBench({
              spec: benchSpec(shapes, seconds, genBatches), python: opts.python, threads: torchThreads, device: opts.torchDevice,
              progress: (line) => console.log(`  ${line}`),
            });
            torch.notes.forEach(noteFor('torch'));
            torchInfo = { torch: torch.torch, device: torch.device, threads: torch.threads };
            results.torch = torch.results;
            printTable(`torch (PyTorch ${torch.torch}, ${torch.device}, ${torch.threads} thread(s), tokens/s)`, results.torch);
          }
          // A command WebGPU refused ran on nothing: the section's numbers are not those of the work it names.
          assertNoGpuError(`in the ${section} section`);
        } catch (err) {
          errors[section] = wasmFailure(err) ?? (err as Error).message;
          console.log(`\n${section}: FAILED: ${errors[section]}`);
          if (err instanceof TypeError || err instanceof ReferenceError) console.error(err);   // a bug: keep its stack
        }
      }

      // After the sections: the step section's steps redone in PyTorch, on the same machine.
      if (stepWork.length) {
        try {
          console.log(`\ntorch-step: ${opts.python} tools/bench/torch_bench.py, ${torchThreads} thread(s), ${opts.torchDevice}: ` +
            'the step section\'s work in PyTorch (no shared-prefix prefill, f32)');
          const torch = await runTorchBench({
            spec: { steps: stepWork.map(torchStepSpec) }, python: opts.python, threads: torchThreads, device: opts.torchDevice,
            progress: (line) => console.log(`  ${line}`),
          });
          torch.notes.forEach(noteFor('torch'));
          torchInfo ??= { torch: torch.torch, device: torch.device, threads: torch.threads };
          results['torch-step'] = torch.results;
          printTable(`torch-step (PyTorch ${torch.torch}, ${torch.device}; seconds per training step, the same work as the step section's)`, torch.results);
        } catch (err) {
          errors['torch-step'] = (err as Error).message;
          console.log(`\ntorch-step: FAILED: ${(err as Error).message}`);
        }
      }

      // After the sections: the webgpu backend (and Dawn) is up only if one of them ran on it.
      if (backend === 'webgpu' && (wanted.includes('model') || wanted.includes('step') || wanted.includes('matmul'))) {
        adapter = await webgpuAdapterCapabilities().catch(() => null);
        if (adapter) console.log(`\nwebgpu adapter: ${adapter.description || adapter.device || adapter.vendor}: ${describeMatmulFeatures(adapter)}`);
      }
      if ((results.model && results.torch) || (results.step && results['torch-step'])) {
        results.ratio = {
          ...(results.model && results.torch ? ratios(results.model, results.torch) : {}),
          ...(results.step && results['torch-step'] ? stepRatios(results.step, results['torch-step']) : {}),
        };
        printTable(`ratio (tfjs ${backend} / PyTorch; above 1 = tfjs faster)`, results.ratio);
      }
      if (opts.json) {
        const report = {
          command: commandLine(), machine, date: new Date().toISOString(),
          backend: wanted.some((w) => w !== 'envs' && w !== 'torch') ? backend : undefined,
          adapter: adapter ?? undefined,   // webgpu: the adapter's identity, features and limits
          torch: torchInfo, results, notes, errors, ...(memoryRows ? { memory: memoryRows } : {}),
          ...(matmulRows ? { matmul: matmulRows } : {}),   // one row per case and implementation (bench-matmul.ts)
          // torch-step: the work each side ran, in tokens per step (bench-torch-step.ts: StepWork)
          ...(stepWork.length ? { stepWork: stepWork.map(({ preset, reference, critic, warmup, timed }) => ({ preset, reference, critic, warmup, timed })) } : {}),
        };
        writeFileAtomic(opts.json, JSON.stringify(report, null, 2) + '\n');
        console.log(`wrote ${opts.json}`);
      }
      const failed = Object.keys(errors);
      if (failed.length) throw new UsageError(`bench: section(s) failed: ${failed.map((s) => `${s} (${errors[s as keyof typeof errors]})`).join('; ')}`);
    });
}

/** This invocation as a rerunnable line, with the Vulkan driver override that a webgpu run on a CPU-only machine needs. */
function commandLine(): string {
  const icd = process.env.VK_ICD_FILENAMES ? `VK_ICD_FILENAMES=${process.env.VK_ICD_FILENAMES} ` : '';
  return `${icd}ragen ${process.argv.slice(2).join(' ')}`;
}

/** "tiny train tokens/s" in both -> "tiny train tfjs/torch" = tfjs / torch. */
function ratios(tfjs: Record<string, number>, torch: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [key, value] of Object.entries(tfjs)) {
    if (key.endsWith(' tokens/s') && torch[key] > 0) out[key.replace(/ tokens\/s$/, ' tfjs/torch')] = value / torch[key];
  }
  return out;
}

function parseList<T extends string>(text: string, what: string, allowed: readonly T[]): T[] {
  const items = text.split(',').map((s) => s.trim()).filter(Boolean);
  if (!items.length) throw new UsageError(`no ${what} given (expected: ${allowed.join(', ')})`);
  for (const s of items) {
    if (!(allowed as readonly string[]).includes(s)) throw new UsageError(`unknown ${what} '${s}' (expected: ${allowed.join(', ')})`);
  }
  return items as T[];
}

function printTable(title: string, rows: Record<string, number>): void {
  console.log(`\n${title}`);
  if (!Object.keys(rows).length) {
    console.log('  (nothing measured)');
    return;
  }
  const width = Math.max(...Object.keys(rows).map((k) => k.length));
  for (const [name, value] of Object.entries(rows)) {
    let shown = value >= 100 ? Math.round(value).toLocaleString('en-US') : value.toPrecision(3);
    if (name.endsWith(' bytes')) shown += ` (${(value / 1024 ** 2).toFixed(value < 10 * 1024 ** 2 ? 2 : 0)} MiB)`;
    console.log(`  ${name.padEnd(width)}  ${shown}`);
  }
}

const gib = (bytes: number) => `${(bytes / 1024 ** 3).toFixed(0)} GiB`;
