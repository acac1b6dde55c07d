// `ragen init-model --shape qwen2.5-0.5b|qwen2.5-3b [--layers N] [--seed S] --out DIR [--force]`: a randomly
// initialised Hugging Face Qwen2 directory with Qwen2.5-Instruct's exact config, tokenizer and chat template, weights
// in bf16 as Qwen ships them (src/model/initModel.ts). Train from it with `ragen train --preset sokoban-qwen --set
// model=DIR`: every step costs what it costs from the real checkpoint (the model only knows nothing).
// Everything is checked before the first weight is drawn: the shape, the layer count (at most the model's own), that
// --out is new, empty or (with --force) a directory init-model wrote, that it can be written, and that the disk has
// room for the weights.
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Command } from 'commander';
import { assertInitModelTarget, writeInitModel } from '../model/initModel';
import { QWEN_SHAPE_NAMES, QWEN_SHAPES, type QwenShapeName } from '../model/qwenShapes';
import { checkOutputDir, assertNotRunOwned } from '../node/safeWrite';
import { intFlag } from './flags';
import { UsageError } from './usage';

interface InitModelFlags {
  shape: string;
  layers?: string;
  seed: string;
  out: string;
  force?: boolean;
  quiet?: boolean;
}

/** Bytes of bf16 weights of a Qwen2 config (tied embedding), to check the disk before writing. */
function weightBytes(config: Record<string, unknown>, layers: number): number {
  const [v, h, i, heads, kv] = [
    'vocab_size',
    'hidden_size',
    'intermediate_size',
    'num_attention_heads',
    'num_key_value_heads',
  ].map((k) => config[k] as number);
  const kvWidth = (h / heads) * kv;
  const perLayer = h * h + h + 2 * (h * kvWidth + kvWidth) + h * h + 3 * h * i + 2 * h;
  return 2 * (v * h + layers * perLayer + h);
}

function checkTarget(out: string, force: boolean, bytes: number): void {
  const target = path.resolve(out);
  try {
    checkOutputDir('--out', out); // writable, or creatable (refuses /proc and /sys before any mkdir)
    assertNotRunOwned('--out', out); // never a run or its checkpoints, --force or not
    assertInitModelTarget(target, force, `--out ${out}`);
  } catch (err) {
    throw new UsageError(
      (err as Error).message.startsWith('--out') ? (err as Error).message : `--out ${out}: ${(err as Error).message}`,
    );
  }
  let existing = target;
  while (!fs.existsSync(existing)) existing = path.dirname(existing);
  const free = fs.statfsSync(existing);
  const available = free.bavail * free.bsize;
  if (bytes * 1.05 > available) {
    throw new UsageError(
      `--out ${out}: the weights need ${(bytes / 1024 ** 3).toFixed(2)} GiB and only ` +
        `${(available / 1024 ** 3).toFixed(2)} GiB are free there (nothing was written)`,
    );
  }
}

export function registerInitModel(program: Command): void {
  program
    .command('init-model')
    .description(
      "write a randomly initialised Qwen2.5 model directory (Qwen's exact config, tokenizer and chat template; bf16 weights)",
    )
    .requiredOption('--shape <name>', `the model's shape: ${QWEN_SHAPE_NAMES.join(' or ')}`)
    .option(
      '--layers <n>',
      "decoder layers, from 1 to the model's own (24 for 0.5b, 36 for 3b); widths and vocabulary stay Qwen's",
    )
    .option('--seed <s>', 'seed of the random weights (the same seed writes the same files)', '0')
    .requiredOption('--out <dir>', 'directory to write: new or empty (or, with --force, one init-model wrote)')
    .option('--force', 'replace --out when it is a directory that init-model wrote (never anything else)')
    .option('--quiet', 'no progress on stderr')
    .action(async (flags: InitModelFlags) => {
      if (!(QWEN_SHAPE_NAMES as readonly string[]).includes(flags.shape)) {
        throw new UsageError(`--shape ${flags.shape}: unknown shape (expected: ${QWEN_SHAPE_NAMES.join(', ')})`);
      }
      const shape = flags.shape as QwenShapeName;
      const ownLayers = QWEN_SHAPES[shape].num_hidden_layers as number;
      const layers = intFlag(flags.layers, '--layers', 1, ownLayers);
      const seed = intFlag(flags.seed, '--seed', 0, 2 ** 32 - 1)!;
      checkTarget(flags.out, flags.force ?? false, weightBytes(QWEN_SHAPES[shape], layers ?? ownLayers));
      const log = flags.quiet ? () => {} : (line: string) => console.error(`init-model: ${line}`);
      const t0 = performance.now();
      let result;
      try {
        result = await writeInitModel(flags.out, { shape, layers, seed, replace: flags.force ?? false, progress: log });
      } catch (err) {
        // The disk filling up or a permission changing mid-write is the user's to fix; the temp directory is gone.
        const code = (err as NodeJS.ErrnoException).code;
        if (/nothing was written/.test((err as Error).message)) throw new UsageError((err as Error).message);
        if (code && ['ENOSPC', 'EDQUOT', 'EACCES', 'EPERM', 'EROFS'].includes(code)) {
          throw new UsageError(
            `--out ${flags.out}: writing the model failed (${code}: ${(err as Error).message.split('\n')[0]}); nothing was written`,
          );
        }
        throw err;
      }
      log(
        `wrote ${result.dir}: ${flags.shape}${layers ? ` with ${layers} layers` : ''}, ` +
          `${(result.parameters / 1e6).toFixed(1)}M parameters (bf16, ${(result.bytes / 1024 ** 2).toFixed(0)} MiB), ` +
          `${((performance.now() - t0) / 1000).toFixed(1)} s`,
      );
    });
}
