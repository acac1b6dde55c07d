// `ragen init-model --shape qwen2.5-0.5b|qwen2.5-3b [--layers N] [--seed S] --out DIR`: a randomly initialised
// Hugging Face Qwen2 directory with Qwen2.5-Instruct's exact config, tokenizer and chat template, weights in bf16 as
// Qwen ships them (src/model/initModel.ts). Train from it with `ragen train --preset sokoban-qwen --set model=DIR`:
// every step costs what it costs from the real checkpoint (the model only knows nothing).
import type { Command } from 'commander';
import { writeInitModel } from '../model/initModel';
import { QWEN_SHAPE_NAMES, type QwenShapeName } from '../model/qwenShapes';
import { UsageError } from './usage';

interface InitModelFlags {
  shape: string;
  layers?: string;
  seed: string;
  out: string;
  quiet?: boolean;
}

export function registerInitModel(program: Command): void {
  program
    .command('init-model')
    .description("write a randomly initialised Qwen2.5 model directory (Qwen's exact config, tokenizer and chat template; bf16 weights)")
    .requiredOption('--shape <name>', `the model's shape: ${QWEN_SHAPE_NAMES.join(' or ')}`)
    .option('--layers <n>', 'decoder layers instead of the model\'s own (24 for 0.5b, 36 for 3b); widths and vocabulary stay Qwen\'s')
    .option('--seed <s>', 'seed of the random weights (the same seed writes the same files)', '0')
    .requiredOption('--out <dir>', 'directory to write (missing, empty, or an earlier model directory, which is replaced)')
    .option('--quiet', 'no progress on stderr')
    .action(async (flags: InitModelFlags) => {
      if (!(QWEN_SHAPE_NAMES as readonly string[]).includes(flags.shape)) {
        throw new UsageError(`--shape ${flags.shape}: unknown shape (expected: ${QWEN_SHAPE_NAMES.join(', ')})`);
      }
      const layers = flags.layers === undefined ? undefined : integerFlag(flags.layers, '--layers', 1);
      const seed = integerFlag(flags.seed, '--seed', 0);
      const log = flags.quiet ? () => {} : (line: string) => console.error(`init-model: ${line}`);
      const t0 = performance.now();
      let result;
      try {
        result = await writeInitModel(flags.out, { shape: flags.shape as QwenShapeName, layers, seed, progress: log });
      } catch (err) {
        const message = (err as Error).message;
        if (/refusing|not a directory/.test(message)) throw new UsageError(`--out ${flags.out}: ${message}`);
        throw err;
      }
      log(`wrote ${result.dir}: ${flags.shape}${layers ? ` with ${layers} layers` : ''}, ` +
        `${(result.parameters / 1e6).toFixed(1)}M parameters (bf16, ${(result.bytes / 1024 ** 2).toFixed(0)} MiB), ` +
        `${((performance.now() - t0) / 1000).toFixed(1)} s`);
    });
}

function integerFlag(text: string, flag: string, min: number): number {
  const n = Number(text);
  if (!/^\s*\d+\s*$/.test(text) || !Number.isSafeInteger(n) || n < min) throw new UsageError(`${flag} must be an integer >= ${min}, got '${text}'`);
  return n;
}
