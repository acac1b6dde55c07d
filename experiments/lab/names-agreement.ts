// Does a two-name-pair warm start's answer go through its reasoning (issue 34, item 2)? Samples 64 training-pair
// episodes at temperature 1 and counts the answers that name the arm the reasoning picks ("... so I pick X." /
// "I choose X."), printing the ones that do not.
//   npx tsx experiments/lab/names-agreement.ts runs/names/warmstart
import { initBackend } from '../../src/model/backend';
import { loadCheckpointDir } from '../../src/model/checkpointDir';
import { Qwen2Model } from '../../src/model/qwen2';
import { echoTrapNamesConfig } from '../lib/echoTrapNames';
import { checkPolicy } from '../../src/warmstart/warmstart';

const dir = process.argv[2];
if (!dir) throw new Error('usage: npx tsx experiments/lab/names-agreement.ts CHECKPOINT_DIR');
await initBackend('wasm');
const checkpoint = await loadCheckpointDir(dir);
const model = new Qwen2Model(checkpoint.config, checkpoint.weights);
const config = echoTrapNamesConfig();
const check = await checkPolicy(model, checkpoint.tokenizer, config, {
  temperature: 1,
  seed: 1,
  episodes: 64,
  split: 'train',
});
let agree = 0,
  counted = 0;
for (const t of check.trajectories) {
  const turn = t.turns[0];
  const picked = /(?:pick|choose) (\w+)\.?<\/think>/.exec(turn.response)?.[1];
  const answer = turn.parsedActions[0];
  if (picked === undefined || answer === undefined) continue;
  counted++;
  if (picked === answer) agree++;
  else console.log(JSON.stringify(turn.response));
}
console.log(`the answer names the arm the reasoning picks in ${agree} of ${counted} episodes (64 sampled)`);
