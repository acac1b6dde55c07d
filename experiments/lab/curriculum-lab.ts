// Issue 15's curriculum experiment: can a tiny warm start learn to copy the board from one-turn episodes (where the
// copy forms after ~3,000 SFT steps, docs/findings.md) and keep it on the preset's full multi-turn protocol?
// Phase 1 trains on one-turn demonstrations (agent.maxTurn=1), phase 2 on the preset's own episodes, one model and
// one tokenizer (built from both demonstration sets). Then the 256 held-out seeds (123-378, temperature 0.5), as
// warmstart-lab.ts measures them, with 95 % Wilson intervals. Demonstration seeds: phase 1 from 1,000,000, phase 2
// from 2,000,000 (recipe seeds 0 and 1), never an evaluation seed.
//   npx tsx experiments/lab/curriculum-lab.ts --preset frozenlake-tiny --out runs/lab2/NAME \
//     --set agent.trainEnvs.0.config.observationFormat=grid_coord --set agent.valEnvs.0.config.observationFormat=grid_coord \
//     [--phase1 3000] [--phase2 1000] [--episodes1 4096] [--episodes2 2048]
import * as fs from 'node:fs';
import { Command } from 'commander';
import { initBackend } from '../../src/model/backend';
import { saveCheckpointDir } from '../../src/model/checkpointDir';
import { Qwen2Model, initQwen2Weights } from '../../src/model/qwen2';
import { applyOverrides } from '../../src/starpo/config';
import { presetConfig } from '../../src/starpo/presets';
import {
  WARMSTART_RECIPES,
  buildWarmStartTokenizer,
  demonstrationsForRun,
  tinyQwen2Config,
  tokenizeRendered,
  trainSft,
  warmStartRecipeName,
  warmStartTags,
} from '../../src/warmstart/warmstart';
import { heldOutCheck, recordLabResult } from '../lib/heldOut';

const o = new Command()
  .requiredOption('--preset <name>')
  .requiredOption('--out <dir>')
  .option(
    '--set <key=value>',
    'run config override of both phases (repeatable)',
    (v: string, acc: string[]) => [...acc, v],
    [],
  )
  .option('--phase1 <steps>', 'SFT steps on one-turn episodes', '3000')
  .option('--phase2 <steps>', 'SFT steps on the full episodes', '1000')
  .option('--episodes1 <n>', 'one-turn demonstrations', '4096')
  .option('--episodes2 <n>', 'full demonstrations', '2048')
  .option('--episodes <n>', 'held-out episodes to evaluate', '256')
  .parse()
  .opts<{
    preset: string;
    out: string;
    set: string[];
    phase1: string;
    phase2: string;
    episodes1: string;
    episodes2: string;
    episodes: string;
  }>();

await initBackend('wasm');
const t0 = Date.now();
const name = warmStartRecipeName(o.preset);
const recipe = { ...WARMSTART_RECIPES[name], imperfectFraction: 0 };
const full = applyOverrides(presetConfig(name), o.set);
const oneTurn = applyOverrides(presetConfig(name), [...o.set, 'agent.maxTurn=1']);
const demos1 = demonstrationsForRun(oneTurn, { ...recipe, episodes: Number(o.episodes1), seed: 0 });
const demos2 = demonstrationsForRun(full, { ...recipe, episodes: Number(o.episodes2), seed: 1 });
const tokenizer = buildWarmStartTokenizer([...demos1, ...demos2], warmStartTags(full), recipe.vocabSize);
const modelConfig = tinyQwen2Config(full.model.tiny, tokenizer.vocabSize);
const model = new Qwen2Model(modelConfig, initQwen2Weights(modelConfig, recipe.seed));
const phases = [
  { name: 'one-turn', demos: demos1, steps: Number(o.phase1) },
  { name: 'full', demos: demos2, steps: Number(o.phase2) },
];
const finalLoss: number[] = [];
for (const [i, phase] of phases.entries()) {
  if (phase.steps === 0) continue;
  const losses = await trainSft(
    model,
    phase.demos.map((d) => tokenizeRendered(tokenizer, d.training)),
    tokenizer.padTokenId!,
    {
      steps: phase.steps,
      batchSize: recipe.batchSize,
      lr: recipe.lr,
      warmupSteps: recipe.warmupSteps,
      seed: i,
      gradClip: full.actor.gradClip,
      onStep: (step, loss) => {
        if (step % 100 === 0 || step === phase.steps)
          console.log(`${phase.name} ${step}/${phase.steps} loss ${loss.toFixed(3)}`);
      },
    },
  );
  const tail = losses.slice(-Math.max(1, Math.round(losses.length / 10)));
  finalLoss.push(tail.reduce((a, b) => a + b, 0) / tail.length);
}
fs.mkdirSync(o.out, { recursive: true });
await saveCheckpointDir(o.out, model, tokenizer);
const check = await heldOutCheck(model, tokenizer, full, Number(o.episodes));
recordLabResult(o.out, {
  preset: o.preset,
  out: o.out,
  set: o.set,
  phases: phases.map((p) => ({ name: p.name, steps: p.steps, demos: p.demos.length })),
  finalLoss,
  ...check,
  seconds: (Date.now() - t0) / 1000,
});
model.dispose();
