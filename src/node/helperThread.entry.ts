// The helper worker thread: exposes the Trainer's helper (src/starpo/helper.ts) to the parent over Comlink.
import { parentPort } from 'node:worker_threads';
import * as Comlink from 'comlink';
import nodeEndpoint from 'comlink/dist/esm/node-adapter.mjs';
import { createHelper } from '../starpo/helper';

if (!parentPort) throw new Error('helperThread.entry.ts runs in a worker thread');
Comlink.expose(createHelper(), nodeEndpoint(parentPort));
