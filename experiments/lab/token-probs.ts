// What a warm start has learned, token by token: plays a few fresh demonstrations of a preset (seeds far from the
// ones SFT used), runs the checkpoint once over each and prints every trained-on token with the probability the model
// gives it. A copied fact ("I am at (3, 2)" after "Player: (3, 2)") shows as ~1.0; a guess shows as ~1/choices.
//   npx tsx experiments/lab/token-probs.ts --checkpoint runs/lab2/NAME --preset frozenlake-tiny [--set key=value ...] [--episodes 3]
import * as tf from '@tensorflow/tfjs';
import { Command } from 'commander';
import { initBackend } from '../../src/model/backend';
import { loadCheckpointDir } from '../../src/model/checkpointDir';
import { Qwen2Model } from '../../src/model/qwen2';
import { applyOverrides } from '../../src/starpo/config';
import { presetConfig } from '../../src/starpo/presets';
import {
  WARMSTART_RECIPES,
  demonstrationsForRun,
  tokenizeRendered,
  warmStartRecipeName,
} from '../../src/warmstart/warmstart';

const o = new Command()
  .requiredOption('--checkpoint <dir>')
  .requiredOption('--preset <name>')
  .option(
    '--set <key=value>',
    'run config override, as the warm start was built (repeatable)',
    (v: string, acc: string[]) => [...acc, v],
    [],
  )
  .option('--episodes <n>', 'demonstrations to score', '3')
  .parse()
  .opts<{ checkpoint: string; preset: string; set: string[]; episodes: string }>();

await initBackend('wasm');
const checkpoint = await loadCheckpointDir(o.checkpoint);
const model = new Qwen2Model(checkpoint.config, checkpoint.weights);
const tokenizer = checkpoint.tokenizer;
const name = warmStartRecipeName(o.preset);
const config = applyOverrides(presetConfig(name), o.set);
// Recipe seed 7: demonstration seeds DEMO_SEED_BASE + 7,000,000 and up, which no shipped or lab recipe (seed 0) used.
const demos = demonstrationsForRun(config, {
  ...WARMSTART_RECIPES[name],
  episodes: Number(o.episodes),
  seed: 7,
  imperfectFraction: 0,
});
// The samples SFT trains on: the whole episode, or one per turn under a context window (agent.maxContextWindow).
for (const sample of demos.flatMap((d) => d.samples)) {
  const example = tokenizeRendered(tokenizer, sample);
  const logProbs = tf.tidy(() =>
    (model.forward(tf.tensor2d([example.ids], [1, example.ids.length], 'int32')) as tf.Tensor3D)
      .squeeze([0])
      .logSoftmax(-1),
  );
  const rows = (await logProbs.array()) as number[][];
  logProbs.dispose();
  let line = '';
  example.targetMask.forEach((trained, i) => {
    if (!trained) return;
    const target = example.ids[i + 1];
    const p = Math.exp(rows[i][target]);
    const top = rows[i].indexOf(Math.max(...rows[i]));
    // An unlikely token also shows what the model expected instead.
    line += `${tokenizer.decode([target])}[${p.toFixed(2)}${p < 0.1 ? ` top ${JSON.stringify(tokenizer.decode([top]))}` : ''}]`;
  });
  console.log(`${sample.messages.filter((m) => m.role === 'user').pop()?.content}\n${line}\n`);
}
model.dispose();
