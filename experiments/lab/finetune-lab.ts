// Continue a warm start's supervised fine-tuning on other demonstrations (issue 15): load a checkpoint, play the
// preset's demonstrations with recipe overrides (e.g. a larger imperfectFraction), train on them with the
// checkpoint's own tokenizer, then measure the 256 held-out seeds (123-378, temperature 0.5) as warmstart-lab.ts does.
// A quick stand-in for a full `ragen warmstart` rebuild when only the demonstrations' actions change.
//   npx tsx experiments/lab/finetune-lab.ts --preset sokoban-tiny --from public/warmstart/sokoban-tiny \
//     --out runs/lab/NAME --recipe imperfectFraction=0.6 --recipe steps=1000 --recipe lr=1e-3 [--recipe seed=7]
import * as fs from 'node:fs';
import { Command } from 'commander';
import { initBackend } from '../../src/model/backend';
import { loadCheckpointDir, saveCheckpointDir } from '../../src/model/checkpointDir';
import { Qwen2Model } from '../../src/model/qwen2';
import { applyOverrides } from '../../src/starpo/config';
import { presetConfig } from '../../src/starpo/presets';
import {
  WARMSTART_RECIPES,
  demonstrationsForRun,
  tokenizeRendered,
  trainSft,
  warmStartRecipeName,
  type WarmStartRecipe,
} from '../../src/warmstart/warmstart';
import { demonstrationStats } from '../../src/warmstart/demonstrations';
import { heldOutCheck, recordLabResult } from '../lib/heldOut';
import { parseRecipeOverrides } from '../lib/recipeOverrides';

const o = new Command()
  .requiredOption('--preset <name>')
  .requiredOption('--from <dir>', 'checkpoint to continue from (its tokenizer is kept)')
  .requiredOption('--out <dir>')
  .option('--recipe <key=value>', 'recipe override (repeatable)', (v: string, acc: string[]) => [...acc, v], [])
  .option('--set <key=value>', 'run config override (repeatable)', (v: string, acc: string[]) => [...acc, v], [])
  .option('--episodes <n>', 'held-out episodes to evaluate', '256')
  .parse()
  .opts<{ preset: string; from: string; out: string; recipe: string[]; set: string[]; episodes: string }>();

await initBackend('wasm');
const t0 = Date.now();
const name = warmStartRecipeName(o.preset);
const recipe: WarmStartRecipe = { ...WARMSTART_RECIPES[name], ...parseRecipeOverrides(o.recipe) };
const config = applyOverrides(presetConfig(name), o.set);
const demos = demonstrationsForRun(config, recipe);
console.log(`demonstrations: ${JSON.stringify(demonstrationStats(demos))}`);
const loaded = await loadCheckpointDir(o.from);
const model = new Qwen2Model(loaded.config, loaded.weights);
const tokenizer = loaded.tokenizer;
const examples = demos.flatMap((d) => d.samples.map((s) => tokenizeRendered(tokenizer, s)));
const losses = await trainSft(model, examples, tokenizer.padTokenId!, {
  steps: recipe.steps,
  batchSize: recipe.batchSize,
  lr: recipe.lr,
  warmupSteps: recipe.warmupSteps,
  seed: recipe.seed,
  gradClip: config.actor.gradClip,
  onStep: (step, loss) => {
    if (step % 100 === 0 || step === recipe.steps)
      console.log(`sft ${step}/${recipe.steps} loss ${loss.toFixed(3)} ${((Date.now() - t0) / 1000).toFixed(0)} s`);
  },
});
fs.mkdirSync(o.out, { recursive: true });
await saveCheckpointDir(o.out, model, tokenizer);
const result: Record<string, unknown> = {
  preset: o.preset,
  from: o.from,
  out: o.out,
  recipe,
  set: o.set,
  finalLoss: losses.at(-1),
};
for (const temperature of [0.5, 1])
  result[`t${temperature}`] = await heldOutCheck(model, tokenizer, config, Number(o.episodes), temperature);
result.seconds = (Date.now() - t0) / 1000;
recordLabResult(o.out, result);
model.dispose();
