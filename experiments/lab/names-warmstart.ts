// The warm start of the two-name-pair lesson variant (experiments/lab/echo-trap-names.yaml; issue 34, item 2): the
// echo-trap recipe played on both pairs, with the loss on the prompt too and 1,000 steps. With fewer steps (150, 300)
// or without the prompt in the loss the tiny model answers with the other pair's names half of the time (43.8 %
// valid actions in the check); this recipe reads the pair (94-100 % valid).
//   npx tsx experiments/lab/names-warmstart.ts OUT_DIR
import * as fs from 'node:fs';
import { initBackend } from '../../src/model/backend';
import { saveCheckpointDir } from '../../src/model/checkpointDir';
import { echoTrapNamesConfig } from '../lib/echoTrapNames';
import { buildWarmStart, checkPolicy } from '../../src/warmstart/warmstart';

const out = process.argv[2];
if (!out) throw new Error('usage: npx tsx experiments/lab/names-warmstart.ts OUT_DIR');
if (fs.existsSync(out)) throw new Error(`${out} exists: remove it first`);
const config = echoTrapNamesConfig();
await initBackend('wasm');
const { model, tokenizer } = await buildWarmStart('echo-trap', {
  config,
  recipe: { steps: 1000, trainOnPrompt: true },
  onPhase: (phase, detail) => console.log(`- ${phase}: ${detail}`),
});
const check = await checkPolicy(model, tokenizer, config, { temperature: 1, seed: 1, episodes: 64, split: 'train' });
console.log(
  `check on the training pairs (64 episodes, t=1): valid actions ${(100 * check.validActionRate).toFixed(1)} %, success ${(100 * check.success).toFixed(1)} %`,
);
await saveCheckpointDir(out, model, tokenizer, {});
console.log(`wrote ${out}`);
