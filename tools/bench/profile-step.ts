// Where a whole training step's kernel time goes: tf.profile of one real StarPO step of a tiny preset (after one
// warm-up step), kernel count and time summed by kernel name.
//   npx tsx tools/bench/profile-step.ts [preset] [wasm|webgpu|cpu] [--set key=value ...]
import * as tf from '@tensorflow/tfjs';
import { benchStepConfig } from '../../src/cli/bench-step';
import { modelDirFor } from '../../src/cli/modelDir';
import { initBackend, type BackendName } from '../../src/model/backend';
import { MemorySink } from '../../src/metrics/sink';
import { readModelDir } from '../../src/node/runDir';
import { Trainer } from '../../src/starpo/trainer';

const [preset = 'sokoban-tiny', backend = 'wasm', ...rest] = process.argv.slice(2);
const overrides = rest.filter((a, i) => rest[i - 1] === '--set');
await initBackend(backend as BackendName);
const config = benchStepConfig(preset, { backend: backend as BackendName, repeats: 2, overrides });
const trainer = await Trainer.create(config, { policyFiles: readModelDir(modelDirFor(config)), sink: new MemorySink() });
await trainer.step();
let metrics: Record<string, number> = {};
const t0 = performance.now();
const prof = await tf.profile(async () => { metrics = (await trainer.step()).metrics; });
const wall = performance.now() - t0;
const byName = new Map<string, { n: number; ms: number }>();
for (const k of prof.kernels) {
  const e = byName.get(k.name) ?? { n: 0, ms: 0 };
  e.n++; e.ms += typeof k.kernelTimeMs === 'number' ? k.kernelTimeMs : 0;
  byName.set(k.name, e);
}
const total = [...byName.values()].reduce((a, e) => a + e.ms, 0);
console.log(`${preset} on ${backend}: ${prof.kernels.length} kernels, kernel time ${total.toFixed(0)} ms, wall ${wall.toFixed(0)} ms (profiled)`);
for (const key of ['timing_s/gen', 'timing_s/old_log_prob', 'timing_s/ref', 'timing_s/adv', 'timing_s/update_actor', 'timing_s/update_critic']) {
  if (metrics[key] !== undefined) console.log(`  ${key.padEnd(24)} ${metrics[key].toFixed(2)} s`);
}
for (const [name, e] of [...byName].sort((a, b) => b[1].ms - a[1].ms).slice(0, 18)) {
  console.log(`  ${name.padEnd(24)} ${String(e.n).padStart(6)} calls ${e.ms.toFixed(1).padStart(8)} ms ${(100 * e.ms / total).toFixed(1).padStart(5)} %`);
}
trainer.dispose();
