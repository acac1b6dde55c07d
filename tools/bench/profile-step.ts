// Where a whole training step's kernel time goes: tf.profile of one real StarPO step of a tiny preset (after one
// warm-up step), kernel count and time summed by kernel name.
//   npx tsx tools/bench/profile-step.ts [preset] [wasm|webgpu|cpu] [--set key=value ...]
import { benchStepConfig } from '../../src/bench/step';
import { modelDirFor } from '../../src/cli/modelDir';
import { initBackend, type BackendName } from '../../src/model/backend';
import { MemorySink } from '../../src/metrics/sink';
import { readCheckpointFiles } from '../../src/model/checkpointDir';
import { Trainer } from '../../src/starpo/trainer';
import { printKernelRows, profileKernels } from './kernelProfile';

const [preset = 'sokoban-tiny', backend = 'wasm', ...rest] = process.argv.slice(2);
const overrides = rest.filter((a, i) => rest[i - 1] === '--set');
await initBackend(backend as BackendName);
const config = benchStepConfig(preset, { backend: backend as BackendName, repeats: 2, overrides });
const trainer = await Trainer.create(config, {
  policyFiles: readCheckpointFiles(modelDirFor(config)),
  sink: new MemorySink(),
});
await trainer.step();
let metrics: Record<string, number> = {};
const prof = await profileKernels(async () => {
  metrics = (await trainer.step()).metrics;
});
console.log(
  `${preset} on ${backend}: ${prof.kernels} kernels, kernel time ${prof.totalMs.toFixed(0)} ms, wall ${prof.wallMs.toFixed(0)} ms (profiled)`,
);
for (const key of [
  'timing_s/gen',
  'timing_s/old_log_prob',
  'timing_s/ref',
  'timing_s/adv',
  'timing_s/update_actor',
  'timing_s/update_critic',
]) {
  if (metrics[key] !== undefined) console.log(`  ${key.padEnd(24)} ${metrics[key].toFixed(2)} s`);
}
printKernelRows(prof, 18, 24, 6);
trainer.dispose();
