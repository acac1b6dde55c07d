// The numeric flags of every subcommand are parsed here, each against a documented range, before any work: a flag
// out of range is one UsageError line (exit 2) naming the flag, its range and what was given. The ranges of flags
// that set a config key are the config schema's (src/starpo/config), those of `ragen eval`'s protocol flags are
// PROTOCOL_LIMITS (src/eval/scorecard.ts); the others are in FLAG_LIMITS below.
import { parseWorkersChoice, type WorkersChoice } from '../starpo/workers';
import { UsageError } from './usage';

/** Upper bounds of the flags that are neither config keys nor eval protocol fields. */
export const FLAG_LIMITS = {
  /** `ragen export --gpus-per-node`: GPUs per node of the RAGEN run. */
  gpusPerNode: 1_024,
  /** `ragen export --nodes`: nodes of the Ray cluster. */
  nodes: 10_000,
  /** `ragen warmstart --steps`: SFT steps of the first cycle. */
  warmstartSteps: 100_000,
  /** `ragen warmstart --check-episodes`: sampled validation episodes. */
  checkEpisodes: 10_000,
  /** `ragen eval --fail-on-regression`: percentage points. */
  regressionPoints: 100,
  /** `ragen bench --step-repeats`: timed steps per preset. */
  stepRepeats: 1_000,
  /** `ragen bench --seconds`: least timing per measurement. */
  benchSeconds: 3_600,
  /** `ragen bench --torch-threads`. */
  torchThreads: 1_024,
  /** `ragen bench`: sequences generated or trained together (`--gen-batches`, `--rollout-batches`, `--rollouts`, B of
   *  `--tokens`). The paper's step is 128. */
  benchBatch: 4_096,
  /** `ragen bench`: tokens per sequence (T of `--tokens`). */
  benchSeqLen: 131_072,
  /** `ragen bench`: decoder layers of a cut model (`--layers`, `--rollout-layers`). Qwen2.5-3B has 36. */
  benchLayers: 1_000,
  /** `ragen bench --vocab`: a cut vocabulary. Qwen's is 151,936. */
  benchVocab: 1_000_000,
} as const;

/** A whole number from `min` to `max` written in decimal digits, or undefined when the flag was not given. */
export function intFlag(text: string | undefined, flag: string, min: number, max: number): number | undefined {
  if (text === undefined) return undefined;
  const n = Number(text);
  if (!/^\s*-?\d+\s*$/.test(text) || !Number.isSafeInteger(n) || n < min)
    throw new UsageError(`${flag} must be an integer >= ${min}, got '${clip(text)}'`);
  if (n > max) throw new UsageError(`${flag} must be an integer from ${min} to ${max}, got '${clip(text)}'`);
  return n;
}

/** A comma-separated list of whole numbers from `min` to `max` (empty items skipped), or undefined when not given. */
export function intListFlag(text: string | undefined, flag: string, min: number, max: number): number[] | undefined {
  if (text === undefined) return undefined;
  return text
    .split(',')
    .filter((x) => x.trim() !== '')
    .map((x) => intFlag(x, flag, min, max)!);
}

/** A finite number from `min` to `max`, or undefined when the flag was not given. */
export function numberFlag(text: string | undefined, flag: string, min: number, max: number): number | undefined {
  if (text === undefined) return undefined;
  const n = Number(text);
  if (text.trim() === '' || !Number.isFinite(n) || n < min)
    throw new UsageError(`${flag} must be a number >= ${min}, got '${clip(text)}'`);
  if (n > max) throw new UsageError(`${flag} must be a number from ${min} to ${max}, got '${clip(text)}'`);
  return n;
}

/** A value as echoed in an error line: at most 60 characters. */
export function clip(text: string, max = 60): string {
  return text.length <= max ? text : `${text.slice(0, max)}… (${text.length} characters)`;
}

/** `--workers`: cores per run, 1, 2 (a helper thread) or auto (src/starpo/workers.ts decides). */
export function workersFlag(text: string | undefined): WorkersChoice {
  const choice = parseWorkersChoice(text ?? 'auto');
  if (choice === null) throw new UsageError(`--workers must be 1, 2 or auto, got '${text}'`);
  return choice;
}
