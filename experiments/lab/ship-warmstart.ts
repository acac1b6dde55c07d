// Ships a warm start built by warmstart-lab.ts: copies its model files into public/warmstart/<preset>/ and writes the
// warmstart.json that `ragen warmstart` would (the same two 32-episode checks, at the rollout and the validation
// temperature). For recipes too long to build twice in one sitting; the lab run and `ragen warmstart` run the same
// code with the same recipe (compare a short rebuild with `cmp` before shipping, docs/findings.md).
//   npx tsx experiments/lab/ship-warmstart.ts --preset sokoban-tiny --from runs/lab/NAME
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Command } from 'commander';
import { loadPolicy } from '../../src/model/index';
import { saveCheckpointDir } from '../../src/model/checkpointDir';
import { presetConfig } from '../../src/starpo/presets';
import {
  WARMSTART_RECIPES,
  checkPolicy,
  warmStartDir,
  warmStartRecipeName,
  type PolicyCheck,
} from '../../src/warmstart/warmstart';

const o = new Command()
  .requiredOption('--preset <name>')
  .requiredOption(
    '--from <dir>',
    "a warmstart-lab.ts output directory (its line in ../results.jsonl gives the build's figures)",
  )
  .option('--check-episodes <n>', 'validation episodes of each check', '32')
  .parse()
  .opts<{ preset: string; from: string; checkEpisodes: string }>();

const name = warmStartRecipeName(o.preset);
const recipe = WARMSTART_RECIPES[name];
const lines = fs
  .readFileSync(path.join(path.dirname(o.from), 'results.jsonl'), 'utf8')
  .trim()
  .split('\n');
const built = lines
  .map((l) => JSON.parse(l))
  .reverse()
  .find((r) => path.resolve(r.out) === path.resolve(o.from));
if (!built) throw new Error(`no line for ${o.from} in ${path.join(path.dirname(o.from), 'results.jsonl')}`);
if (JSON.stringify(built.recipe) !== JSON.stringify(recipe)) {
  throw new Error(
    `${o.from} was built with recipe ${JSON.stringify(built.recipe)}, not ${name}'s ${JSON.stringify(recipe)}`,
  );
}

const policy = await loadPolicy(o.from, { backend: 'wasm' });
const config = presetConfig(name);
const episodes = Number(o.checkEpisodes);
const rates = (c: PolicyCheck) => {
  const { trajectories: _omitted, ...r } = c;
  return r;
};
const atRollout = await checkPolicy(policy.model, policy.tokenizer, config, {
  temperature: config.rollout.temperature,
  seed: 1,
  episodes,
});
const atVal = await checkPolicy(policy.model, policy.tokenizer, config, {
  temperature: config.rollout.valTemperature,
  seed: 2,
  episodes,
});
const report = {
  preset: name,
  backend: policy.backend.name,
  builtWith: `experiments/lab/warmstart-lab.ts (${o.from})`,
  recipe,
  demonstrations: built.demos,
  sft: { steps: recipe.steps, seconds: built.sftSeconds, finalLoss: built.finalLoss },
  check: {
    episodes,
    [`t${config.rollout.temperature}`]: rates(atRollout),
    [`t${config.rollout.valTemperature}`]: rates(atVal),
  },
};
const out = warmStartDir(name);
await saveCheckpointDir(out, policy.model, policy.tokenizer, {
  'warmstart.json': new TextEncoder().encode(JSON.stringify(report, null, 2) + '\n'),
});
policy.dispose();
console.log(
  `wrote ${out}: check at t${config.rollout.valTemperature} success ${(atVal.success * 100).toFixed(1)} % of ${episodes}`,
);
