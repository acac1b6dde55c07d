// The playground's state, as Svelte 5 runes in a plain module: components read it, and only the functions here
// change it. Today it holds the backend the worker got and the matmul self-check; training state joins it later.
import { startTrainerWorker, type TrainerClient } from './trainer-client';
import {
  MATMUL_CHECK_SIZE,
  MATMUL_TOLERANCE,
  type BackendChoice,
  type BackendInfo,
  type MatmulCheckResult,
} from '../../workers/protocol';

/** Where the page is in bringing the worker up: starting the backend, self-checking it, usable, or failed. */
export type Phase = 'starting' | 'checking' | 'ready' | 'failed';

class PlaygroundState {
  /** The backend asked for (from the URL). */
  requested = $state<BackendChoice>('auto');
  phase = $state<Phase>('starting');
  /** What the worker's tfjs is running, once it has started. */
  backend = $state<BackendInfo | null>(null);
  matmul = $state<MatmulCheckResult | null>(null);
  /** The message of the error that stopped start-up, if any. */
  error = $state<string | null>(null);

  /** True once the self-check ran and stayed within tolerance. */
  matmulPassed = $derived(this.matmul !== null && this.matmul.maxAbsError <= MATMUL_TOLERANCE);
}

export const playground = new PlaygroundState();

let client: TrainerClient | null = null;

/** Starts the worker with the requested backend and runs the matmul self-check. Errors end up in `playground.error`. */
export async function connect(requested: BackendChoice): Promise<void> {
  client?.terminate();
  client = startTrainerWorker();
  playground.requested = requested;
  playground.phase = 'starting';
  playground.backend = null;
  playground.matmul = null;
  playground.error = null;
  try {
    playground.backend = await client.api.init(requested);
    playground.phase = 'checking';
    playground.matmul = await client.api.matmulCheck(MATMUL_CHECK_SIZE);
    playground.phase = playground.matmulPassed ? 'ready' : 'failed';
    if (!playground.matmulPassed) {
      playground.error = `the ${playground.matmul.backend} backend computed a wrong matmul ` +
        `(max abs error ${playground.matmul.maxAbsError} > ${MATMUL_TOLERANCE})`;
    }
  } catch (err) {
    playground.phase = 'failed';
    playground.error = err instanceof Error ? err.message : String(err);
  }
}

/** Records an error found before the worker could start (e.g. a bad URL parameter). */
export function fail(message: string): void {
  playground.phase = 'failed';
  playground.error = message;
}
