// The page's handle on the trainer worker. Vite bundles the worker from this `new URL(..., import.meta.url)`
// pattern (with `worker.format: 'es'`, a module worker), and Comlink turns its messages into typed async calls.
import * as Comlink from 'comlink';
import type { TrainerWorkerApi } from '../../workers/protocol';

export interface TrainerClient {
  api: Comlink.Remote<TrainerWorkerApi>;
  /**
   * Rejects, with the reason in plain words, if the worker dies (an uncaught error, a module that fails to load, a
   * message it cannot read). A dead worker never answers its pending Comlink calls: race them with this.
   */
  crashed: Promise<never>;
  /** Stops the worker and everything running in it (its GPU memory is freed with it). */
  terminate(): void;
}

export function startTrainerWorker(): TrainerClient {
  const worker = new Worker(new URL('../../workers/trainer.worker.ts', import.meta.url), {
    type: 'module',
    name: 'trainer',
  });
  const api = Comlink.wrap<TrainerWorkerApi>(worker);
  const crashed = new Promise<never>((_, reject) => {
    worker.addEventListener('error', (e) => {
      e.preventDefault();
      reject(
        new Error(
          `the trainer worker crashed${e.message ? `: ${e.message}` : ' (no reason given; the tab may be out of memory)'}`,
        ),
      );
    });
    worker.addEventListener('messageerror', () =>
      reject(new Error('the trainer worker sent a message the page could not read')),
    );
  });
  crashed.catch(() => undefined); // handled by whoever races it; never an unhandled rejection
  return {
    api,
    crashed,
    terminate() {
      api[Comlink.releaseProxy]();
      worker.terminate();
    },
  };
}
