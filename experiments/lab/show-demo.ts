// Prints the training samples of one demonstration of a preset exactly as SFT sees them (prompt and response),
// so a recipe's prompt layout can be read without training anything.
//   npx tsx experiments/lab/show-demo.ts --preset frozenlake-tiny [--set key=value ...]
import { Command } from 'commander';
import { applyOverrides } from '../../src/starpo/config';
import { presetConfig } from '../../src/starpo/presets';
import { WARMSTART_RECIPES, demonstrationsForRun, warmStartRecipeName } from '../../src/warmstart/warmstart';

const o = new Command()
  .requiredOption('--preset <name>')
  .option('--set <key=value>', 'run config override (repeatable)', (v: string, acc: string[]) => [...acc, v], [])
  .parse()
  .opts<{ preset: string; set: string[] }>();
const name = warmStartRecipeName(o.preset);
const config = applyOverrides(presetConfig(name), o.set);
const [demo] = demonstrationsForRun(config, { ...WARMSTART_RECIPES[name], episodes: 1, seed: 7 });
for (const sample of demo.samples) console.log(sample.text, "\ntrainable turns:", sample.segments.filter((s) => s.trainable).map((s) => s.turn).join(", "), "\n");
