// Random weights of a full-size model in Node, drawn on every core. One core draws ~17 M normal samples a second,
// so Qwen2.5-0.5B's 494 M take ~30 s per model on one core, paid again by every bench section and device tool that
// builds one (minutes of a lent GPU's time). The stream is seekable (fillSeededNormal), so worker threads each fill
// a slice of a tensor in place, in shared memory, and the result is the same bytes as one sequential loop: same
// seed, same weights, whatever the number of cores. Small models stay on the calling thread, where starting workers
// would cost more than it saves.
import * as os from 'node:os';
import { Worker } from 'node:worker_threads';
import * as tf from '@tensorflow/tfjs';
import { fillSeededNormal } from './seeded';
import { qwen2InitPlan, type WeightMap } from './qwen2';
import type { Qwen2Config } from './config';

/** Below this many samples a tensor is filled on the calling thread. */
const PARALLEL_MIN_SAMPLES = 1 << 21;

/** A worker runs fillSeededNormal's own source text (it has no imports), so there is no second copy to drift. */
const WORKER_SOURCE = `
const { parentPort } = require('node:worker_threads');
const fillSeededNormal = ${fillSeededNormal.toString()};
parentPort.on('message', (m) => {
  fillSeededNormal(new Float32Array(m.buffer, m.byteOffset, m.length), m.seed, m.firstUniform, m.std, m.bothHalves);
  parentPort.postMessage(0);
});`;

/**
 * Worker threads that draw normal samples into one shared scratch buffer. `close()` when done, or the process stays
 * alive. One buffer, reused, because a SharedArrayBuffer a worker has seen is freed only when that worker's heap is
 * collected, which an idle worker hardly ever does: a new buffer per tensor held a whole model's worth (2 GB at
 * Qwen2.5-0.5B) where `ragen init-model` streams one tensor at a time.
 */
export class NormalFillPool {
  private readonly workers: Worker[];
  private scratch = new SharedArrayBuffer(0);

  constructor(readonly size = Math.min(16, os.availableParallelism?.() ?? os.cpus().length)) {
    this.workers = Array.from({ length: Math.max(1, size) }, () => new Worker(WORKER_SOURCE, { eval: true }));
  }

  /**
   * `length` samples, the numbers of fillSeededNormal(out, seed, firstUniform, std, bothHalves). A large draw is a
   * view on the pool's scratch buffer, valid until the next draw: copy it (`slice()`) to keep it.
   */
  async draw(
    length: number,
    seed: number,
    firstUniform: number,
    std: number,
    bothHalves: boolean,
  ): Promise<Float32Array> {
    if (length < PARALLEL_MIN_SAMPLES || this.workers.length === 1) {
      const out = new Float32Array(length);
      fillSeededNormal(out, seed, firstUniform, std, bothHalves);
      return out;
    }
    if (this.scratch.byteLength < 4 * length) this.scratch = new SharedArrayBuffer(4 * length);
    const buffer = this.scratch;
    // Even slice lengths, so that with bothHalves every slice starts a Box-Muller pair.
    const slice = Math.ceil(length / this.workers.length / 2) * 2;
    await Promise.all(
      this.workers.map((worker, w) => {
        const start = w * slice;
        const count = Math.min(slice, length - start);
        if (count <= 0) return Promise.resolve();
        // Uniforms before sample `start`: two per sample, or two per pair of samples.
        const skipped = bothHalves ? start : 2 * start;
        return new Promise<void>((resolve, reject) => {
          const done = () => {
            worker.off('error', fail);
            resolve();
          };
          const fail = (err: Error) => {
            worker.off('message', done);
            reject(err);
          };
          worker.once('message', done);
          worker.once('error', fail);
          worker.postMessage({
            buffer,
            byteOffset: 4 * start,
            length: count,
            seed,
            firstUniform: firstUniform + skipped,
            std,
            bothHalves,
          });
        });
      }),
    );
    return new Float32Array(buffer, 0, length);
  }

  async close(): Promise<void> {
    await Promise.all(this.workers.map((w) => w.terminate()));
  }
}

/**
 * initQwen2Weights (src/model/qwen2.ts) drawn on every core: the same weights for the same seed, bit for bit.
 * For the benches and device tools that build a full-size model with random weights.
 */
export async function initQwen2WeightsParallel(
  config: Qwen2Config,
  seed: number,
  opts: { valueHead?: boolean } = {},
): Promise<WeightMap> {
  const plan = qwen2InitPlan(config, opts);
  const pool = new NormalFillPool();
  const weights: WeightMap = {};
  try {
    for (const w of plan) {
      let data: Float32Array;
      if (w.fill === 'normal') {
        data = await pool.draw(w.size, seed, w.firstUniform, w.std, false);
        // A copy out of the pool's scratch: tfjs keeps the array it is given (cpu) or reads it later (webgpu).
        if (data.buffer instanceof SharedArrayBuffer) data = data.slice();
      } else {
        data = new Float32Array(w.size);
        if (w.fill === 'ones') data.fill(1);
      }
      weights[w.name] = tf.tensor(data, w.shape, 'float32');
    }
  } catch (err) {
    tf.dispose(Object.values(weights));
    throw err;
  } finally {
    await pool.close();
  }
  return weights;
}
