// The Trainer's helper (src/starpo/helper.ts) in a Node worker thread, so `ragen train` uses a second core.
// The thread runs TypeScript through tsx like the CLI itself: helperThread.boot.mjs registers tsx's loader, then
// imports helperThread.entry.ts, which exposes the helper over Comlink.
import { Worker } from 'node:worker_threads';
import * as Comlink from 'comlink';
import nodeEndpoint from 'comlink/dist/esm/node-adapter.mjs';
import * as os from 'node:os';
import type { HelperApi } from '../starpo/helper';
import type { RunConfig } from '../starpo/config';
import { UsageError } from './usage';

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

export function workersFlag(text: string | undefined): number | 'auto' {
  if (text === undefined || text === 'auto') return 'auto';
  if (text !== '1' && text !== '2') throw new UsageError(`--workers must be 1, 2 or auto, got '${text}'`);
  return Number(text);
}

/**
 * Helper threads for a run: with 'auto', one when the machine has a second core, the backend runs on the CPU (wasm
 * or cpu: one thread each; WebGPU is one device) and the model is a tiny one (a helper holds a copy of the actor and
 * the critic, which is nothing for a tiny model and gigabytes for Qwen2.5).
 */
export function helperThreads(workers: number | 'auto', backend: string, config: RunConfig): number {
  if (workers !== 'auto') return workers - 1;
  return os.availableParallelism() >= 2 && (backend === 'wasm' || backend === 'cpu') && config.model.pretrained === null ? 1 : 0;
}
