// The Trainer's helper (src/starpo/helper.ts) in a Node worker thread, so `ragen train` uses a second core.
// The thread runs TypeScript through tsx like the CLI itself: helperThread.boot.mjs registers tsx's loader, then
// imports helperThread.entry.ts, which exposes the helper over Comlink.
import { Worker } from 'node:worker_threads';
import * as Comlink from 'comlink';
import nodeEndpoint from 'comlink/dist/esm/node-adapter.mjs';
import * as os from 'node:os';
import type { HelperApi } from '../starpo/helper';
import type { RunConfig } from '../starpo/config';
import { helpersFor, type WorkersChoice } from '../starpo/workers';

export interface HelperThread {
  api: HelperApi;
  /** Ends the thread (after the Trainer is disposed). */
  terminate(): Promise<void>;
}

export function spawnHelperThread(): HelperThread {
  const worker = new Worker(new URL('./helperThread.boot.mjs', import.meta.url), {
    workerData: { entry: new URL('./helperThread.entry.ts', import.meta.url).href },
  });
  // An error inside the thread rejects the call in flight; this keeps a crash from also killing the process.
  worker.on('error', () => {});
  const api = Comlink.wrap<HelperApi>(nodeEndpoint(worker)) as unknown as HelperApi;
  return {
    api,
    async terminate() {
      (api as unknown as { [Comlink.releaseProxy](): void })[Comlink.releaseProxy]();
      await worker.terminate();
    },
  };
}

/** Helper threads for a run (see helpersFor: the browser decides the same way). */
export function helperThreads(workers: number | 'auto', backend: string, config: RunConfig): number {
  return helpersFor(workers as WorkersChoice, {
    cores: os.availableParallelism(),
    backend,
    pretrained: config.model.pretrained !== null,
  });
}
