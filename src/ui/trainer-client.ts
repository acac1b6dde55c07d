// The page's handle on the trainer worker. Vite bundles the worker from this `new URL(..., import.meta.url)`
// pattern (with `worker.format: 'es'`, a module worker), and Comlink turns its messages into typed async calls.
import * as Comlink from 'comlink';
import type { TrainerWorkerApi } from '../../workers/protocol';

export interface TrainerClient {
  api: Comlink.Remote<TrainerWorkerApi>;
  /** Stops the worker and everything running in it (its GPU memory is freed with it). */
  terminate(): void;
}

export function startTrainerWorker(): TrainerClient {
  const worker = new Worker(new URL('../../workers/trainer.worker.ts', import.meta.url), {
    type: 'module',
    name: 'trainer',
  });
  const api = Comlink.wrap<TrainerWorkerApi>(worker);
  return {
    api,
    terminate() {
      api[Comlink.releaseProxy]();
      worker.terminate();
    },
  };
}
