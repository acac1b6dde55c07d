// The Trainer's helper in the browser: a second web worker, started by the trainer worker, that generates half of
// each rollout batch and trains the critic on another core (src/starpo/helper.ts says what it does and why the
// results are the same as without it). Messages are plain postMessage through Comlink, so it needs no
// cross-origin isolation.
import * as Comlink from 'comlink';
import { createHelper, type HelperApi } from '../src/starpo/helper';
import { wasmPaths } from './wasm-paths';

const helper = createHelper();
const api: HelperApi = {
  ...helper,
  // The Trainer does not know where this site keeps the wasm binaries; this worker does.
  init: (init) => helper.init({ ...init, wasmPaths }),
};
Comlink.expose(api);
