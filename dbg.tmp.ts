import { initBackend } from './src/model/backend';
import { presetConfig } from './src/starpo/presets';
import { readModelDir } from './src/starpo/runDir';
import { modelDirFor } from './src/cli/train';
import { loadCheckpointFiles } from './src/model/checkpoint';
import { Qwen2Model } from './src/model/qwen2';
import { EnvGroupManager, envRegistry, runRollouts, type GenerateFn } from './src/agent/index';
import { envBlocks } from './src/starpo/config';
import { policyGenerateFn } from './src/starpo/policyAgent';
await initBackend('wasm');
const preset = process.argv[2] ?? 'sokoban-tiny';
const config = presetConfig(preset);
const loaded = loadCheckpointFiles(readModelDir(modelDirFor(config)));
const model = new Qwen2Model(loaded.config, loaded.weights);
for (const reuse of [true, false, true, false]) {
  const m = new EnvGroupManager({ mode: 'train', envGroups: config.agent.envGroups, groupSize: config.agent.groupSize, tags: envBlocks(config, 'train'), baseSeed: 10000, formatPenalty: -0.1 }, envRegistry({ responseLength: 64 }));
  const g = policyGenerateFn(model, loaded.tokenizer, { maxNewTokens: config.rollout.maxNewTokens, temperature: 1, seedForCall: (c) => c + 1 });
  const fn: GenerateFn = reuse ? g : (p) => g(p);
  const c0 = process.cpuUsage(), t0 = performance.now();
  const r = await runRollouts(m, fn, { maxTurn: config.agent.maxTurn, maxActionsPerTurn: config.agent.maxActionsPerTurn, promptStyle: 'compact' });
  g.release?.();
  const c = process.cpuUsage(c0);
  console.log(preset, reuse ? 'reuse' : 'no-reuse', 'cpu', ((c.user + c.system) / 1e6).toFixed(2), 's wall', ((performance.now() - t0) / 1000).toFixed(2), 's turns', r.turnsPlayed, 'success', r.trajectories.filter(t => t.success).length);
}
import * as tf from '@tensorflow/tfjs';
{
  const m = new EnvGroupManager({ mode: 'train', envGroups: config.agent.envGroups, groupSize: config.agent.groupSize, tags: envBlocks(config, 'train'), baseSeed: 10000, formatPenalty: -0.1 }, envRegistry({ responseLength: 64 }));
  const g = policyGenerateFn(model, loaded.tokenizer, { maxNewTokens: config.rollout.maxNewTokens, temperature: 1, seedForCall: (c) => c + 1 });
  const t0 = performance.now();
  const prof = await tf.profile(async () => { await runRollouts(m, g, { maxTurn: config.agent.maxTurn, maxActionsPerTurn: config.agent.maxActionsPerTurn, promptStyle: 'compact' }); });
  const byName = new Map<string, { n: number; ms: number }>();
  for (const k of prof.kernels) { const e = byName.get(k.name) ?? { n: 0, ms: 0 }; e.n++; e.ms += k.kernelTimeMs as number; byName.set(k.name, e); }
  const total = [...byName.values()].reduce((a, e) => a + e.ms, 0);
  console.log('PROFILE kernels', prof.kernels.length, 'kernel ms', total.toFixed(0), 'wall', (performance.now() - t0).toFixed(0));
  for (const [name, e] of [...byName].sort((a, b) => b[1].ms - a[1].ms).slice(0, 25)) console.log('PROFILE', name.padEnd(24), e.n, e.ms.toFixed(1));
}
