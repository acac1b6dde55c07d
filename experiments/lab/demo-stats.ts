// Prints the demonstration statistics of a preset's warm-start recipe (with overrides), without training anything:
// how often the demonstrator itself succeeds under the preset's protocol.
//   npx tsx experiments/lab/demo-stats.ts --preset sokoban-tiny [--recipe imperfectFraction=0] [--set key=value ...]
import { Command } from 'commander';
import { applyOverrides } from '../../src/starpo/config';
import { presetConfig } from '../../src/starpo/presets';
import { demonstrationStats } from '../../src/warmstart/demonstrations';
import { WARMSTART_RECIPES, demonstrationsForRun, warmStartRecipeName, type WarmStartRecipe } from '../../src/warmstart/warmstart';
import { parseRecipeOverrides } from '../lib/recipeOverrides';

const o = new Command()
  .requiredOption('--preset <name>')
  .option('--recipe <key=value>', 'recipe override (repeatable)', (v: string, acc: string[]) => [...acc, v], [])
  .option('--set <key=value>', 'run config override (repeatable)', (v: string, acc: string[]) => [...acc, v], [])
  .parse()
  .opts<{ preset: string; recipe: string[]; set: string[] }>();
const name = warmStartRecipeName(o.preset);
const recipe: WarmStartRecipe = { ...WARMSTART_RECIPES[name], ...parseRecipeOverrides(o.recipe) };
const config = applyOverrides(presetConfig(name), o.set);
const demos = demonstrationsForRun(config, recipe);
console.log(JSON.stringify(demonstrationStats(demos), null, 1));
console.log('samples', demos.reduce((n, d) => n + d.samples.length, 0));
