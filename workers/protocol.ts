// The typed contract between the page and the trainer worker. The worker implements `TrainerWorkerApi` and hands
// it to Comlink.expose; the page holds a `Remote<TrainerWorkerApi>` from Comlink.wrap, so every call is checked by
// TypeScript on both sides. Only structured-cloneable data (plain objects, numbers, strings, arrays) crosses it.
import type { BackendChoice, BackendInfo } from '../src/model/backend';
import type { MatmulCheckResult } from './matmul-check';

export type { BackendChoice, BackendInfo, MatmulCheckResult };

/** The backend choices a page may request (`?backend=...`); 'auto' tries webgpu, then wasm, then cpu. */
export const BACKEND_CHOICES: readonly BackendChoice[] = ['auto', 'webgpu', 'wasm', 'cpu'];

/** Side of the matrices the page's self-check multiplies: big enough to use real tiled kernels, fast on SwiftShader. */
export const MATMUL_CHECK_SIZE = 128;

/**
 * Largest |tfjs - float64 reference| accepted as a working matmul. Inputs lie in [-1, 1), so entries of a 128-wide
 * product are sums of 128 terms of size <= 1; float32 rounding over that is ~1e-5 at worst, while a broken kernel
 * (wrong tile, garbage buffer) is off by O(1).
 */
export const MATMUL_TOLERANCE = 1e-4;

export interface TrainerWorkerApi {
  /** Starts the requested tfjs backend inside the worker and reports which one is active and why others were skipped. */
  init(backend: BackendChoice): Promise<BackendInfo>;
  /** Multiplies two seeded n x n matrices on the active backend and compares with a plain-JS reference. */
  matmulCheck(n: number): Promise<MatmulCheckResult>;
}
