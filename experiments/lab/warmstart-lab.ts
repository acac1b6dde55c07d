// Warm-start experiments (issue 15's recipe search): build a tiny preset's warm start with recipe and config
// overrides, then measure it on the 256 held-out validation seeds (123-378) at temperature 0.5, as `ragen eval` does,
// with 95 % Wilson intervals. Writes the checkpoint and a JSON line of results.
//
//   npx tsx experiments/lab/warmstart-lab.ts --preset sokoban-tiny --out runs/lab/NAME \
//     [--recipe steps=2000] [--set model.tiny.hiddenSize=192] [--episodes 256]
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Command } from 'commander';
import { initBackend } from '../../src/model/backend';
import { saveCheckpointDir } from '../../src/model/checkpointDir';
import { applyOverrides } from '../../src/starpo/config';
import { presetConfig } from '../../src/starpo/presets';
import { buildWarmStart, warmStartRecipeName, type WarmStartRecipe } from '../../src/warmstart/warmstart';
import { heldOutCheck, recordLabResult } from '../lib/heldOut';
import { parseRecipeOverrides } from '../lib/recipeOverrides';

const program = new Command()
  .requiredOption('--preset <name>')
  .requiredOption('--out <dir>')
  .option('--recipe <key=value>', 'recipe override (repeatable)', (v: string, acc: string[]) => [...acc, v], [])
  .option('--set <key=value>', 'run config override (repeatable)', (v: string, acc: string[]) => [...acc, v], [])
  .option('--episodes <n>', 'held-out episodes to evaluate', '256')
  .option(
    '--snapshot-every <n>',
    'also save the model every n SFT steps to OUT/checkpoints/step-<n>, with OUT/config.json, so `ragen eval` reads them (0: never)',
    '0',
  )
  .parse();
const o = program.opts<{
  preset: string;
  out: string;
  recipe: string[];
  set: string[];
  episodes: string;
  snapshotEvery: string;
}>();
const snapshotEvery = Number(o.snapshotEvery);

await initBackend('wasm');
const recipe: Partial<WarmStartRecipe> = parseRecipeOverrides(o.recipe);
const config = applyOverrides(presetConfig(warmStartRecipeName(o.preset)), o.set);
if (snapshotEvery > 0) {
  fs.mkdirSync(o.out, { recursive: true });
  fs.writeFileSync(path.join(o.out, 'config.json'), JSON.stringify(config, null, 2));
}
const t0 = Date.now();
const built = await buildWarmStart(o.preset, {
  recipe,
  config,
  onStep: (step, steps, loss) => {
    if (step % 100 === 0 || step === steps)
      console.log(`sft ${step}/${steps} loss ${loss.toFixed(3)} ${((Date.now() - t0) / 1000).toFixed(0)} s`);
  },
  onModel: async (step, model, tokenizer) => {
    if (snapshotEvery > 0 && step % snapshotEvery === 0)
      await saveCheckpointDir(path.join(o.out, 'checkpoints', `step-${step}`), model, tokenizer);
  },
});
fs.mkdirSync(o.out, { recursive: true });
await saveCheckpointDir(o.out, built.model, built.tokenizer);
const check = await heldOutCheck(built.model, built.tokenizer, config, Number(o.episodes));
recordLabResult(o.out, {
  preset: o.preset,
  out: o.out,
  recipe: built.recipe,
  set: o.set,
  demos: built.demonstrations,
  finalLoss: built.finalLoss,
  sftSeconds: built.sftSeconds,
  ...check,
  seconds: (Date.now() - t0) / 1000,
});
built.model.dispose();
