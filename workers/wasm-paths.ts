// Where the tfjs wasm binaries are in the built site, for the trainer worker and its helper worker.
// Vite copies each binary into the build and gives its URL. Without these, tfjs fetches the .wasm files next to the
// bundle, the server answers index.html, and the backend fails with "expected magic word 00 61 73 6d".
import wasmUrl from '@tensorflow/tfjs-backend-wasm/dist/tfjs-backend-wasm.wasm?url';
import wasmSimdUrl from '@tensorflow/tfjs-backend-wasm/dist/tfjs-backend-wasm-simd.wasm?url';
import wasmThreadedSimdUrl from '@tensorflow/tfjs-backend-wasm/dist/tfjs-backend-wasm-threaded-simd.wasm?url';

export const wasmPaths = {
  'tfjs-backend-wasm.wasm': wasmUrl,
  'tfjs-backend-wasm-simd.wasm': wasmSimdUrl,
  'tfjs-backend-wasm-threaded-simd.wasm': wasmThreadedSimdUrl,
};
