// The trainer worker: every tfjs computation of the browser playground runs here, never on the page's main thread,
// so the page stays responsive while a step runs. For now it only starts a backend and self-checks it; training
// (the same Trainer the Node CLI uses) is added behind the same protocol.
import * as Comlink from 'comlink';
import { initBackend } from '../src/model/backend';
import { runMatmulCheck } from './matmul-check';
import type { BackendChoice, TrainerWorkerApi } from './protocol';
// Vite copies each binary into the build and gives its URL. Without these, tfjs fetches the .wasm files next to the
// bundle, the server answers index.html, and the backend fails with "expected magic word 00 61 73 6d".
import wasmUrl from '@tensorflow/tfjs-backend-wasm/dist/tfjs-backend-wasm.wasm?url';
import wasmSimdUrl from '@tensorflow/tfjs-backend-wasm/dist/tfjs-backend-wasm-simd.wasm?url';
import wasmThreadedSimdUrl from '@tensorflow/tfjs-backend-wasm/dist/tfjs-backend-wasm-threaded-simd.wasm?url';

const wasmPaths = {
  'tfjs-backend-wasm.wasm': wasmUrl,
  'tfjs-backend-wasm-simd.wasm': wasmSimdUrl,
  'tfjs-backend-wasm-threaded-simd.wasm': wasmThreadedSimdUrl,
};

const api: TrainerWorkerApi = {
  async init(backend: BackendChoice) {
    return initBackend(backend, { wasmPaths, log: (line) => console.info(`[trainer worker] ${line}`) });
  },
  async matmulCheck(n: number) {
    return runMatmulCheck(n);
  },
};

Comlink.expose(api);
