// The Trainer's helper in the browser: a second web worker, started by the trainer worker, that generates half of
// each rollout batch and trains the critic on another core (src/starpo/helper.ts says what it does and why the
// results are the same as without it). Messages are plain postMessage through Comlink, so it needs no
// cross-origin isolation.
import * as Comlink from 'comlink';
import { createHelper, type HelperApi } from '../src/starpo/helper';
import { wasmPaths } from './wasm-paths';

const helper = createHelper();

// One call at a time, in the order they were sent. In the browser a Pause can abandon a step mid-rollout (the
// trainer worker's ProgressRelay): the helper's generate for that turn is then still running when the re-run step's
// first generate arrives and would release the KV caches the old call is still decoding with. Queued, the old call
// finishes (its answer is dropped) before the new one starts.
let queue: Promise<unknown> = Promise.resolve();
function inOrder<A extends unknown[], R>(call: (...args: A) => Promise<R>): (...args: A) => Promise<R> {
  return (...args) => {
    const result = queue.then(() => call(...args));
    queue = result.catch(() => undefined);
    return result;
  };
}

const api: HelperApi = {
  // The Trainer does not know where this site keeps the wasm binaries; this worker does.
  init: inOrder((init) => helper.init({ ...init, wasmPaths })),
  setActor: inOrder(helper.setActor),
  generate: inOrder(helper.generate),
  release: inOrder(helper.release),
  setCritic: inOrder(helper.setCritic),
  criticValues: inOrder(helper.criticValues),
  criticTrain: inOrder(helper.criticTrain),
};
Comlink.expose(api);
