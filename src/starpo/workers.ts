// How many cores a training run uses: the `--workers` flag of `ragen train` and the playground's "cores" setting.
// Pure (no Node, no DOM), so the CLI (src/node/helperThread.ts) and the browser (workers/trainer.worker.ts) decide
// the same way.

/** Cores per run: 1 (the Trainer alone), 2 (plus a helper on a second core: helper.ts), or auto. */
export type WorkersChoice = 1 | 2 | 'auto';

export const WORKERS_CHOICES: readonly WorkersChoice[] = ['auto', 1, 2];

/** A WorkersChoice from its text ('1', '2', 'auto'), or null when it is none. */
export function parseWorkersChoice(text: string): WorkersChoice | null {
  if (text === 'auto') return 'auto';
  if (text === '1') return 1;
  if (text === '2') return 2;
  return null;
}

export interface CoresAvailable {
  /** Logical cores of the machine (os.availableParallelism, navigator.hardwareConcurrency). */
  cores: number;
  /** The tfjs backend the run trains on. */
  backend: string;
  /** The run starts from a pretrained model (Qwen2.5), not a tiny one. */
  pretrained: boolean;
  /** Runs training at the same time on this machine, each wanting its own cores (2 in classroom mode). */
  runs?: number;
}

/**
 * Helpers for one run: with 'auto', one when every run can have a second core, the backend runs on the CPU (wasm
 * or cpu: one thread each; WebGPU is one device) and the model is a tiny one (a helper holds a copy of the actor and
 * the critic, which is nothing for a tiny model and gigabytes for Qwen2.5).
 */
export function helpersFor(workers: WorkersChoice, available: CoresAvailable): number {
  if (workers !== 'auto') return workers - 1;
  const cpuBackend = available.backend === 'wasm' || available.backend === 'cpu';
  return available.cores >= 2 * (available.runs ?? 1) && cpuBackend && !available.pretrained ? 1 : 0;
}
