// Every environment variable `ragen` reads, checked before any subcommand does work: a bad value is one line naming
// the variable and what it accepts (exit 2), whichever backend the command would run on. Each variable is parsed
// where it is read (the functions called here); this only calls them early.
import { checkModelEnv } from '../model/envSettings';
import { progressSecondsFromEnv } from '../node/stepProgress';
import { UsageError } from './usage';

/** The variables, for --help and the docs: name, what it sets. */
export const ENV_VARIABLES: readonly [string, string][] = [
  [
    'RAGEN_PROGRESS_SECONDS',
    'seconds between progress lines of a long step when stdout is not a terminal (0 to 86400; default 15)',
  ],
  [
    'RAGEN_WEBGPU_MATMUL',
    'the webgpu matmul: tiled or tfjs (f32), or f16 operands with f32 accumulation: f16-storage (any adapter), f16 (shader-f16), subgroup-matrix (chromium-experimental-subgroup-matrix); default: tiled on a GPU, tfjs on a software adapter',
  ],
  ['RAGEN_WEBGPU_ATTENTION', 'the webgpu attention programs: auto, grouped or per-head (default auto)'],
  [
    'RAGEN_WASM_FMA',
    "the wasm kernels' build: 1, relaxed SIMD's fused multiply-add where the engine has it, or 0, SIMD128 only (default 1)",
  ],
  ['RAGEN_DAWN_FLAGS', "extra flags for Dawn's create() in Node, separated by spaces (e.g. backend=vulkan)"],
];

/** Throws a UsageError naming the first variable with a value it does not accept. */
export function checkEnvironment(): void {
  try {
    progressSecondsFromEnv();
    checkModelEnv();
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}
