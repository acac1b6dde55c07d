// `ragen bench`: the one place where performance is measured. Prints a table per section (and JSON with --json) so the
// figures in BENCHMARKS.md come from a command anyone can rerun. This file reads and checks the flags, all before any
// section runs; the sections themselves are src/bench/ (run.ts lists them). A section that fails is reported, the
// others still run, and the command exits non-zero.
import type { Command } from 'commander';
import { DEFAULT_ROLLOUT_BATCHES } from '../bench/rollout';
import { GEN_ENGINES, isGenEngine } from '../bench/generateEngine';
import { MEMORY_PHASES, ROLLOUT_NEW_TOKENS, type MemoryPhase } from '../bench/memory';
import { BENCH_SHAPE_NAMES, defaultTorchPython } from '../bench/model';
import { DEFAULT_SECTIONS, SECTIONS, runBench, type BenchPlan } from '../bench/run';
import { DEFAULT_STEP_PRESETS, benchStepConfig, stepPresetNames } from '../bench/step';
import { BACKEND_NAMES, isBackendName } from '../model/backend';
import { checkOutputFile, writeFileAtomic } from '../node/safeWrite';
import { ConfigError } from '../starpo/config';
import { FLAG_LIMITS, clip, intFlag, intListFlag, workersFlag } from './flags';
import { helperThreads, spawnHelperThread } from '../node/helperThread';
import { modelDirFor } from './modelDir';
import { UsageError } from './usage';

/** The flags as commander hands them over: the text as typed, checked in the action before any section runs. */
interface BenchOptions {
  only: string;
  seconds: string;
  json?: string;
  force?: boolean;
  backend: string;
  shapes: string;
  genBatches?: string;
  python: string;
  torchThreads: string;
  torchDevice: string;
  presets: string;
  stepRepeats: string;
  stepSet: string[];
  workers: string; // the step section
  tokens: string;
  layers?: string;
  rollouts: string;
  phases?: string; // the memory section (tokens: matmul's too)
  checkpointing: string;
  adamw: string;
  lora?: boolean;
  vocab?: string;
  rolloutBatches: string;
  rolloutLayers?: string; // the rollout section
  genEngine: string; // the model section's generate rows and the rollout section
}

export function registerBench(program: Command): void {
  program
    .command('bench')
    .description(
      'measure environment and model throughput on this machine, next to a PyTorch baseline, and time a training step',
    )
    .option('--only <sections>', `comma-separated subset of: ${SECTIONS.join(', ')}`, DEFAULT_SECTIONS.join(','))
    .option('--seconds <s>', 'least time spent timing each measurement (after warm-up)', '1')
    .option('--json <file>', 'also write the results as JSON to this file')
    .option('--force', 'replace an existing --json file')
    .option(
      '--backend <name>',
      'tfjs backend of the model and step sections: wasm, cpu or webgpu (in Node without a GPU, run ' +
        'with VK_ICD_FILENAMES=/usr/lib/chromium/vk_swiftshader_icd.json: a software adapter, for correctness only)',
      'wasm',
    )
    .option('--shapes <names>', `model shapes, comma-separated: ${BENCH_SHAPE_NAMES.join(', ')}`, 'tiny,qwen0.5b')
    .option(
      '--python <path>',
      'interpreter with torch for the baseline (default: .venv-hf/bin/python, the current torch ' +
        "that scripts/setup.sh installs, else Debian's /usr/bin/python3 with its older torch 1.13)",
      defaultTorchPython(),
    )
    .option('--torch-threads <n>', 'torch.set_num_threads of the baseline (tfjs wasm/cpu use 1 thread in Node)', '1')
    .option('--torch-device <device>', 'torch device of the baseline: cpu or cuda', 'cpu')
    .option(
      '--presets <names>',
      `presets of the step section, comma-separated: ${stepPresetNames().join(', ')} ` +
        '(sokoban-qwen with --step-set model=DIR)',
      DEFAULT_STEP_PRESETS.join(','),
    )
    .option(
      '--step-repeats <n>',
      'timed training steps per preset in the step section (after one untimed warm-up step)',
      '2',
    )
    .option(
      '--step-set <key=value>',
      "config override for the step section's presets, as `ragen train --set` (repeatable), " +
        'e.g. --step-set agent.envGroups=2 --step-set agent.trainEnvs.0.nGroups=2',
      (v: string, acc: string[]) => [...acc, v],
      [],
    )
    .option(
      '--gen-batches <n,...>',
      'extra generate() batch sizes of the model and torch sections, for every shape ' +
        '(default: 16,128 for qwen0.5b, none for the tiny shapes; "" for none)',
    )
    .option(
      '--workers <n>',
      'cores per training step in the step section, as `ragen train --workers`: 1, 2 or auto',
      'auto',
    )
    .option('--tokens <BxT>', MEMORY_OPTION_HELP.tokens, '1x1536')
    .option('--layers <n,...>', MEMORY_OPTION_HELP.layers)
    .option('--rollouts <n>', MEMORY_OPTION_HELP.rollouts, '1')
    .option('--phases <names>', MEMORY_OPTION_HELP.phases)
    .option('--checkpointing <on|off>', MEMORY_OPTION_HELP.checkpointing, 'on')
    .option('--adamw <layout>', MEMORY_OPTION_HELP.adamw, 'auto')
    .option('--lora', MEMORY_OPTION_HELP.lora)
    .option('--vocab <n>', MEMORY_OPTION_HELP.vocab)
    .option(
      '--rollout-batches <n,...>',
      'rollout section: rows generated together, env groups of 16 sharing a prompt',
      DEFAULT_ROLLOUT_BATCHES.join(','),
    )
    .option('--rollout-layers <n>', "rollout section: decoder layers of the model (default: the shape's own)")
    .option(
      '--gen-engine <name>',
      `what generates in the model section's generate rows and the rollout section: ${GEN_ENGINES.join(' or ')} ` +
        "(rollout.engine's two engines; the same rows and tokens)",
      'turns',
    )
    .action(async (opts: BenchOptions) => {
      const sections = parseList(opts.only, 'bench section', SECTIONS);
      const shapes = parseList(opts.shapes, 'model shape', BENCH_SHAPE_NAMES);
      const presets = parseList(opts.presets, 'step preset', stepPresetNames());
      const workers = workersFlag(opts.workers);
      const genBatches = intListFlag(opts.genBatches, '--gen-batches', 1, FLAG_LIMITS.benchBatch);
      const stepRepeats = intFlag(opts.stepRepeats, '--step-repeats', 1, FLAG_LIMITS.stepRepeats)!;
      const seconds = Number(opts.seconds);
      if (!(seconds > 0) || !Number.isFinite(seconds)) {
        throw new UsageError(`--seconds must be a positive number, got '${opts.seconds}'`);
      }
      if (seconds > FLAG_LIMITS.benchSeconds)
        throw new UsageError(`--seconds must be at most ${FLAG_LIMITS.benchSeconds}, got '${opts.seconds}'`);
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
      if (sections.includes('step')) {
        // Every preset's config (with --step-set) and warm start are checked before any section runs.
        for (const preset of presets) {
          try {
            modelDirFor(benchStepConfig(preset, { backend, repeats: stepRepeats, overrides: opts.stepSet }));
          } catch (err) {
            if (err instanceof ConfigError || err instanceof UsageError) {
              const hint =
                preset === 'sokoban-qwen' && !opts.stepSet.some((kv) => kv.startsWith('model'))
                  ? ' (here: --step-set model=DIR)'
                  : '';
              throw new UsageError(`step preset '${preset}': ${err.message}${hint}`);
            }
            throw err;
          }
        }
      } else if (opts.stepSet.length) {
        throw new UsageError('--step-set applies to the step section, which is not in --only');
      }
      const memory = { ...parseMemoryOptions(opts), tokens: opts.tokens, lora: !!opts.lora };
      const rolloutBatches = intListFlag(opts.rolloutBatches, '--rollout-batches', 1, FLAG_LIMITS.benchBatch)!;
      if (rolloutBatches.length === 0) throw new UsageError('--rollout-batches must list at least one batch size');
      const rolloutLayers = intFlag(opts.rolloutLayers, '--rollout-layers', 1, FLAG_LIMITS.benchLayers);
      const torchThreads = intFlag(opts.torchThreads, '--torch-threads', 1, FLAG_LIMITS.torchThreads)!;
      if (!isGenEngine(opts.genEngine))
        throw new UsageError(`--gen-engine must be ${GEN_ENGINES.join(' or ')}, got '${opts.genEngine}'`);

      const plan: BenchPlan = {
        sections,
        backend,
        shapes,
        seconds,
        genBatches,
        genEngine: opts.genEngine,
        memory,
        step: {
          presets,
          repeats: stepRepeats,
          overrides: opts.stepSet,
          modelDir: modelDirFor,
          helperFor: (config, name) => (helperThreads(workers, name, config) > 0 ? spawnHelperThread() : null),
        },
        rollout: { batches: rolloutBatches, layers: rolloutLayers },
        torch: { python: opts.python, threads: torchThreads, device: opts.torchDevice },
      };
      const {
        machine,
        results,
        notes,
        errors,
        adapter,
        webgpuDevice,
        matmulSelfChecks,
        torch,
        memory: memoryRows,
        matmul,
        stepWork,
      } = await runBench(plan, console);
      if (opts.json) {
        const report = {
          command: commandLine(),
          machine,
          date: new Date().toISOString(),
          backend: sections.some((w) => w !== 'envs' && w !== 'torch') ? backend : undefined,
          adapter: adapter ?? undefined, // webgpu: the adapter's identity, features and limits
          webgpuDevice: webgpuDevice ?? undefined, // webgpu: the features the backend's device got
          matmulSelfChecks: matmulSelfChecks ?? undefined, // webgpu: each f16 matmul mode's check against f32
          torch,
          results,
          notes,
          errors,
          ...(memoryRows ? { memory: memoryRows } : {}),
          ...(matmul ? { matmul } : {}), // one row per case and implementation (src/bench/matmul.ts)
          // torch-step: the work each side ran, in tokens per step (src/bench/torchStep.ts: StepWork)
          ...(stepWork.length
            ? {
                stepWork: stepWork.map(({ preset, reference, critic, warmup, timed }) => ({
                  preset,
                  reference,
                  critic,
                  warmup,
                  timed,
                })),
              }
            : {}),
        };
        writeFileAtomic(opts.json, JSON.stringify(report, null, 2) + '\n');
        console.log(`wrote ${opts.json}`);
      }
      const failed = Object.keys(errors);
      if (failed.length)
        throw new UsageError(
          `bench: section(s) failed: ${failed.map((s) => `${s} (${errors[s as keyof typeof errors]})`).join('; ')}`,
        );
    });
}

/** This invocation as a rerunnable line, with the Vulkan driver override that a webgpu run on a CPU-only machine needs. */
function commandLine(): string {
  const icd = process.env.VK_ICD_FILENAMES ? `VK_ICD_FILENAMES=${process.env.VK_ICD_FILENAMES} ` : '';
  return `${icd}ragen ${process.argv.slice(2).join(' ')}`;
}

function parseList<T extends string>(text: string, what: string, allowed: readonly T[]): T[] {
  const items = text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (!items.length) throw new UsageError(`no ${what} given (expected: ${allowed.join(', ')})`);
  for (const s of items) {
    if (!(allowed as readonly string[]).includes(s))
      throw new UsageError(`unknown ${what} '${s}' (expected: ${allowed.join(', ')})`);
  }
  return items as T[];
}

/** The memory section's flags (--tokens is the matmul section's too). */
const MEMORY_OPTION_HELP = {
  tokens:
    'memory section: B x T tokens of the update and scoring phases (and T, the dialogue length, of the rollout); ' +
    'matmul section: B x T rows of the layer products',
  layers:
    'memory section: decoder layer counts to measure, e.g. 2,4 (every width and the full vocabulary kept); two or ' +
    "more below the shape's depth also give rows extrapolated to it (default: the shape's own depth)",
  rollouts:
    'memory section: dialogues generated in the rollout phase, in env groups of 16 that share their prompt (the paper step: 128)',
  phases: `memory section: phases to run, comma-separated (default all: ${MEMORY_PHASES.join(', ')})`,
  checkpointing: 'memory section: gradient checkpointing per decoder layer (model.gradientCheckpointing), on or off',
  adamw:
    "memory section: AdamW's layout, 'auto' (the backend's: fused in place on cpu and wasm) or 'per-variable' (webgpu's path)",
  vocab:
    'memory section: cut the vocabulary to this size, every width kept (for a shape whose embedding the backend cannot hold)',
  lora: "memory section: actor and critic train LoRA adapters as RAGEN's config/base-lora.yaml (rank 64, alpha 64, all linear layers), the base weights frozen",
} as const;

/** The memory options of `ragen bench`, checked (a bad value is a UsageError naming it). */
function parseMemoryOptions(o: BenchOptions): Omit<BenchPlan['memory'], 'tokens' | 'lora'> {
  const bt = /^\s*(\d+)\s*x\s*(\d+)\s*$/i.exec(o.tokens);
  if (!bt || Number(bt[1]) < 1 || Number(bt[2]) <= ROLLOUT_NEW_TOKENS + 1) {
    throw new UsageError(
      `--tokens must be BxT with B >= 1 and T > ${ROLLOUT_NEW_TOKENS + 1}, e.g. 1x1536; got '${clip(o.tokens)}'`,
    );
  }
  const batch = intFlag(bt[1], '--tokens B', 1, FLAG_LIMITS.benchBatch)!;
  const seqLen = intFlag(bt[2], '--tokens T', ROLLOUT_NEW_TOKENS + 2, FLAG_LIMITS.benchSeqLen)!;
  const layers = intListFlag(o.layers, '--layers', 1, FLAG_LIMITS.benchLayers);
  const phases =
    o.phases === undefined
      ? undefined
      : o.phases
          .split(',')
          .map((x) => x.trim())
          .filter(Boolean);
  for (const p of phases ?? []) {
    if (!(MEMORY_PHASES as readonly string[]).includes(p))
      throw new UsageError(`unknown memory phase '${p}' (expected: ${MEMORY_PHASES.join(', ')})`);
  }
  if (o.checkpointing !== 'on' && o.checkpointing !== 'off')
    throw new UsageError(`--checkpointing must be on or off, got '${o.checkpointing}'`);
  if (o.adamw !== 'auto' && o.adamw !== 'per-variable')
    throw new UsageError(`--adamw must be auto or per-variable, got '${o.adamw}'`);
  return {
    batch,
    seqLen,
    layers,
    rollouts: intFlag(o.rollouts, '--rollouts', 1, FLAG_LIMITS.benchBatch)!,
    phases: phases as MemoryPhase[] | undefined,
    checkpointing: o.checkpointing === 'on',
    perVariableAdamW: o.adamw === 'per-variable' ? true : undefined,
    ...(o.vocab === undefined ? {} : { vocab: intFlag(o.vocab, '--vocab', 2, FLAG_LIMITS.benchVocab) }),
  };
}
