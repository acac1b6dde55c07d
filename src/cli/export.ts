// `ragen export --run DIR [--step N] --to ragen OUT`: hands a run to RAGEN (veRL on Ray, vLLM rollouts, FSDP) for
// the scale this project does not grow into. OUT gets
//   qwen2-policy/       the checkpoint's policy as a Hugging Face model directory (f32, or bf16 with --dtype bf16)
//   qwen2-critic/       the value model of a PPO run (RAGEN's critic.model.path), so the critic is not re-learnt
//   ragen_export.yaml   a Hydra config extending RAGEN's base.yaml with the run's settings (src/interop/ragenMapping.ts)
//   overrides.txt       the same settings as a Hydra override list
//   README.md           the launch command, and every setting RAGEN cannot express or will do differently
// Both model directories have "qwen" in their name: RAGEN picks its chat-turn tokens by looking for "qwen" in the
// tokenizer's path and refuses anything else.
// Everything is checked before any file is written (exit 2, one line naming the problem), OUT is written to a
// sibling temp directory and renamed into place, and an existing non-empty OUT is never touched.
import type { Command } from 'commander';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { CHECKPOINT_FILES, parseQwen2Config } from '../model/checkpoint';
import { EXPORT_DTYPES, hfModelFiles, type ExportDtype } from '../model/hfExport';
import { shardedSafetensorsNames } from '../model/safetensorsShards';
import { ADAPTER_CONFIG_FILE, ADAPTER_DIR, ADAPTER_WEIGHTS_FILE } from '../model/lora';
import { ConfigError, parseRunConfig, type RunConfig } from '../starpo/config';
import { CRITIC_DIR, POLICY_DIR, RAGEN_CONFIG_NAME, type ExportPlan } from '../interop/exportLayout';
import { renderExportReadme } from '../interop/exportReadme';
import { ragenConfigYaml, hydraOverrides } from '../interop/ragenHydra';
import { toRagen, type RagenConfig } from '../interop/ragenMapping';
import { CONFIG_FILE, listCheckpoints, readRunConfig } from '../node/runDir';
import { readCheckpointFiles } from '../model/checkpointDir';
import { checkOutputDir, writeDirAtomic } from '../node/safeWrite';
import { FLAG_LIMITS, intFlag } from './flags';
import { UsageError } from './usage';

interface ExportFlags {
  run?: string;
  step?: string;
  to?: string;
  dtype?: string;
  gpusPerNode?: string;
  nodes?: string;
  quiet?: boolean;
}

export function registerExport(program: Command): void {
  program
    .command('export')
    .description(
      "hand a run to RAGEN on a Ray cluster: a Hugging Face model directory plus RAGEN's Hydra config and a README with the launch command",
    )
    .argument('<out>', 'directory to create (must not exist, or be empty)')
    .requiredOption('--run <dir>', 'a run directory written by ragen train')
    .option('--step <n>', 'the checkpoint to export (default: the newest)')
    .requiredOption('--to <target>', "what to export for: 'ragen'")
    .option(
      '--dtype <dtype>',
      'weights as f32 (lossless; FSDP trains in f32 anyway) or bf16 (half the size, as Qwen2.5 ships)',
      'f32',
    )
    .option('--gpus-per-node <n>', 'GPUs per node of the RAGEN run (trainer.n_gpus_per_node)', '1')
    .option('--nodes <n>', 'nodes of the Ray cluster (trainer.nnodes)', '1')
    .option('--quiet', 'no summary on stderr')
    .action((out: string, flags: ExportFlags) => {
      runExport(out, flags);
    });
}

/** Everything checked before a file is written. */
export function planExport(out: string, flags: ExportFlags): ExportPlan {
  if (flags.to !== 'ragen') throw new UsageError(`--to ${flags.to}: unknown export target (the only one is 'ragen')`);
  const dtype = flags.dtype as ExportDtype;
  if (!EXPORT_DTYPES.includes(dtype)) throw new UsageError(`--dtype must be f32 or bf16, got '${flags.dtype}'`);
  const gpusPerNode = intFlag(flags.gpusPerNode ?? '1', '--gpus-per-node', 1, FLAG_LIMITS.gpusPerNode)!;
  const nodes = intFlag(flags.nodes ?? '1', '--nodes', 1, FLAG_LIMITS.nodes)!;
  const runDir = path.resolve(flags.run!);
  if (!fs.existsSync(runDir) || !fs.statSync(runDir).isDirectory())
    throw new UsageError(`--run ${flags.run}: no such directory`);
  if (!fs.existsSync(path.join(runDir, CONFIG_FILE)))
    throw new UsageError(`--run ${flags.run}: no ${CONFIG_FILE} there (not a run directory written by ragen train)`);
  let config: RunConfig;
  try {
    const raw = readRunConfig(runDir);
    if (raw !== null && typeof raw === 'object' && 'model_type' in raw) {
      throw new UsageError(
        `--run ${flags.run}: its ${CONFIG_FILE} is a Hugging Face model config, not a run config (not a run directory written by ragen train)`,
      );
    }
    config = parseRunConfig(raw, path.join(flags.run!, CONFIG_FILE));
  } catch (err) {
    if (err instanceof UsageError) throw err;
    throw new UsageError(err instanceof ConfigError ? err.message : (err as Error).message);
  }
  const checkpoints = listCheckpoints(runDir);
  if (checkpoints.length === 0) {
    throw new UsageError(
      `--run ${flags.run}: no complete checkpoint under checkpoints/ (train with trainer.saveFreq > 0, or let the run finish)`,
    );
  }
  let chosen = checkpoints[checkpoints.length - 1];
  if (flags.step !== undefined) {
    const wanted = flags.step.trim();
    const found = checkpoints.find((c) => String(c.step) === wanted);
    if (!found)
      throw new UsageError(
        `--step ${flags.step}: ${flags.run} has no checkpoint of that step (steps: ${checkpoints.map((c) => c.step).join(', ')})`,
      );
    chosen = found;
  }
  const outDir = path.resolve(out);
  if (fs.existsSync(outDir) && (!fs.statSync(outDir).isDirectory() || fs.readdirSync(outDir).length > 0)) {
    throw new UsageError(
      `${out} already exists and is not an empty directory: choose a new output directory (nothing was written)`,
    );
  }
  if (!fs.existsSync(path.dirname(outDir)))
    throw new UsageError(`${out}: the directory ${path.dirname(out)} does not exist`);
  try {
    checkOutputDir('OUT', out, { fresh: true }); // not inside a run's checkpoints/, and somewhere writable (not /proc)
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  return { runDir, out: outDir, config, step: chosen.step, checkpointDir: chosen.dir, dtype, gpusPerNode, nodes };
}

/** The files of OUT, by relative path. */
export function exportFiles(plan: ExportPlan): {
  files: Record<string, Uint8Array>;
  ragen: RagenConfig;
  critic: boolean;
} {
  let checkpoint: Record<string, Uint8Array>;
  try {
    checkpoint = readCheckpointFiles(plan.checkpointDir);
  } catch (err) {
    throw new UsageError(`${plan.checkpointDir}: ${(err as Error).message}`);
  }
  // The model files, and a LoRA run's adapters (hfModelFiles folds them into the exported weights).
  const names = [...CHECKPOINT_FILES, ADAPTER_DIR + ADAPTER_CONFIG_FILE, ADAPTER_DIR + ADAPTER_WEIGHTS_FILE];
  // Weights past 2 GiB come as Hugging Face's shards and their index (safetensorsShards.ts).
  const pick = (prefix: string) => {
    const model = Object.fromEntries(
      Object.keys(checkpoint)
        .filter((n) => n.startsWith(prefix))
        .map((n) => [n.slice(prefix.length), checkpoint[n]]),
    );
    let shards: string[];
    try {
      shards = shardedSafetensorsNames(model, 'model');
    } catch (err) {
      throw new UsageError(
        `${plan.checkpointDir}${prefix ? `/${prefix.slice(0, -1)}` : ''}: ${(err as Error).message}`,
      );
    }
    const wanted = [...names, ...shards];
    return Object.fromEntries(Object.entries(model).filter(([n]) => wanted.includes(n)));
  };
  const files: Record<string, Uint8Array> = {};
  const add = (dir: string, model: Record<string, Uint8Array>) => {
    let converted: Record<string, Uint8Array>;
    try {
      converted = hfModelFiles(model, plan.dtype);
    } catch (err) {
      throw new UsageError(`${plan.checkpointDir}${dir === CRITIC_DIR ? '/critic' : ''}: ${(err as Error).message}`);
    }
    for (const [name, bytes] of Object.entries(converted)) files[`${dir}/${name}`] = bytes;
  };
  add(POLICY_DIR, pick(''));
  const criticFiles = pick('critic/');
  const critic =
    plan.config.algorithm.advEstimator === 'gae' && shardedSafetensorsNames(criticFiles, 'model').length > 0;
  if (critic) add(CRITIC_DIR, criticFiles);

  const modelConfig = parseQwen2Config(JSON.parse(new TextDecoder().decode(files[`${POLICY_DIR}/config.json`])));
  const ragen = toRagen(plan.config, {
    modelPath: path.join(plan.out, POLICY_DIR),
    criticPath: critic ? path.join(plan.out, CRITIC_DIR) : null,
    maxPositions: modelConfig.max_position_embeddings,
    gpusPerNode: plan.gpusPerNode,
    nodes: plan.nodes,
    experimentName: `${path.basename(plan.runDir)}-step${plan.step}`,
  });
  const source = `exported by ragen export from ${plan.runDir} (checkpoint step ${plan.step}, ${plan.dtype} weights)`;
  const text = (s: string) => new TextEncoder().encode(s);
  files[`${RAGEN_CONFIG_NAME}.yaml`] = text(
    ragenConfigYaml(ragen, [
      `RAGEN config ${source}.`,
      `Extends RAGEN's config/base.yaml: python train.py --config-dir <this directory> --config-name ${RAGEN_CONFIG_NAME}`,
      'See README.md beside this file for what does not carry over.',
    ]),
  );
  files['overrides.txt'] = text(hydraOverrides(ragen).join('\n') + '\n');
  files['README.md'] = text(renderExportReadme({ plan, ragen, critic, modelConfig }));
  return { files, ragen, critic };
}

export function runExport(out: string, flags: ExportFlags): void {
  const plan = planExport(out, flags);
  const { files, ragen, critic } = exportFiles(plan);
  writeDirAtomic(plan.out, files); // an empty OUT (checked in the plan) is replaced
  if (!flags.quiet) {
    const differs = ragen.warnings.filter((w) => !w.harmless);
    process.stderr.write(
      `export: ${plan.runDir} step ${plan.step} -> ${plan.out} (${plan.dtype}${critic ? ', with the critic' : ''})\n`,
    );
    for (const w of differs) process.stderr.write(`export: warning: ${w.key}: ${w.message}\n`);
    const notes = ragen.warnings.length - differs.length;
    if (notes)
      process.stderr.write(
        `export: ${notes} more setting(s) without a RAGEN key behave the same in RAGEN: listed in README.md\n`,
      );
  }
  process.stdout.write(
    `${plan.out}\nlaunch (from a RAGEN checkout): python train.py --config-dir ${plan.out} --config-name ${RAGEN_CONFIG_NAME}\n`,
  );
}
