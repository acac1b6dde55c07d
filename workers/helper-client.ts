// The trainer worker's handle on its helper worker (helper.worker.ts): the browser's counterpart of the CLI's helper
// thread (src/node/helperThread.ts). A worker started from a worker ends with it, so a page that terminates the
// trainer worker (Stop during an update, a backend switch) ends its helper too.
import * as Comlink from 'comlink';
import type { HelperApi } from '../src/starpo/helper';

export interface HelperWorker {
  api: HelperApi;
  terminate(): void;
}

export function spawnHelperWorker(): HelperWorker {
  const worker = new Worker(new URL('./helper.worker.ts', import.meta.url), { type: 'module', name: 'trainer helper' });
  const api = Comlink.wrap<HelperApi>(worker);
  return {
    api: api as unknown as HelperApi,
    terminate() {
      api[Comlink.releaseProxy]();
      worker.terminate();
    },
  };
}
