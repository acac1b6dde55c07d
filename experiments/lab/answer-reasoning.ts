// Does the answer read the reasoning, or only the board? (issue 34, item 2: why the mechanism lesson's reasoning
// templates in both arms.) For each checkpoint, the first turn of every training env (the mechanism lesson's 8 lakes)
// is sampled SAMPLES times with the run's sampler, then each sampled answer (the text from `</think>` on) is scored by
// teacher forcing in three contexts (experiments/lib/answerReasoning.ts):
//   own:             its own prompt and its own reasoning;
//   other reasoning: its own prompt, the reasoning sampled on another env (every other env's samples);
//   other board:     another env's prompt, its own reasoning.
// reasoning effect = log p(answer | own) - mean log p(answer | other reasoning)   (nats per answer, averaged)
// board effect     = log p(answer | own) - mean log p(answer | other board)
// A first turn whose think block is not closed has no reasoning to swap: the table says how many of the samples had one.
// An answer that ignores its reasoning has a reasoning effect near 0; RAGEN-2's MI asks the same of the reasoning and
// the prompt. The policy's reasoning can only steer its reward through the answer, so a reasoning effect near 0 means
// the reward says nothing about the reasoning tokens.
//   npx tsx experiments/lab/answer-reasoning.ts [--samples 4] [--seed 7] [--preset NAME] CHECKPOINT_DIR ...
// A run directory's newest checkpoint and its config are used (src/eval/load.ts); a warm start needs --preset. For a
// checkpoint RUN/checkpoints/step-N, the run's first-turn MI at step N and its 5-step training success are printed too.
import { Command } from 'commander';
import * as path from 'node:path';
import { movingAverage, readMetrics, series, trainTag } from '../lib/analysis';
import { answerEffects, splitResponse } from '../lib/answerReasoning';
import { EnvGroupManager, runRollouts } from '../../src/agent/index';
import { envRegistry } from '../../src/agent/registry';
import { loadActor, resolveCheckpoint } from '../../src/eval/load';
import { initBackend } from '../../src/model/backend';
import { chatTokenIds } from '../../src/model/tokenizer';
import { mixSeed } from '../../src/model/seeded';
import { continuationLogProbSums } from '../../src/starpo/collapseScoring';
import { agentFormatFromConfig, envBlocks } from '../../src/starpo/config/agent';
import { policyGenerateFn } from '../../src/starpo/policyAgent';

const program = new Command()
  .option('--samples <n>', 'first turns sampled per env', '4')
  .option('--seed <n>', 'sampling seed', '7')
  .option('--preset <name>', 'the config of a directory without a run config (a warm start)')
  .argument('<dirs...>')
  .parse();
const o = program.opts<{ samples: string; seed: string; preset?: string }>();
const dirs = program.processedArgs[0] as string[];
const samples = Number(o.samples),
  seed = Number(o.seed);
if (!Number.isInteger(samples) || samples < 1)
  throw new Error(`--samples must be a positive integer, got ${o.samples}`);

await initBackend('wasm');
console.log(
  '| checkpoint | MI at its step | training success (5-step mean) | first turns | own log p(answer) | reasoning effect (nats): mean, median turn | board effect (nats) |',
);
console.log('|---|---:|---:|---:|---:|---:|---:|');

/** The run's first-turn MI and 5-step training success at the step of a RUN/checkpoints/step-N directory. */
function runAt(dir: string): { mi: string; success: string } {
  const step = /checkpoints[/\\]step-(\d+)[/\\]?$/.exec(dir)?.[1];
  const rows = step ? readMetrics(path.join(dir, '..', '..')) : [];
  const tag = trainTag(rows);
  if (!step || !tag) return { mi: '-', success: '-' };
  const at = (s: [number, number][]) => s.find(([x]) => x === Number(step))?.[1];
  const mi = at(series(rows, 'collapse_first_turn_sample/mi_estimate'));
  const success = at(movingAverage(series(rows, `train/${tag}/success`), 5));
  return {
    mi: mi === undefined ? '-' : mi.toFixed(3),
    success: success === undefined ? '-' : `${Math.round(success * 100)} %`,
  };
}
for (const dir of dirs) {
  const { modelDir, config } = resolveCheckpoint(dir, o.preset);
  const { model, tokenizer } = await loadActor(modelDir);
  try {
    const blocks = envBlocks(config, 'train');
    const envs = blocks.reduce((s, b) => s + b.nGroups, 0);
    const manager = new EnvGroupManager(
      { mode: 'val', envGroups: envs, groupSize: samples, tags: blocks, baseSeed: seed },
      envRegistry(),
    );
    const generate = policyGenerateFn(model, tokenizer, {
      maxNewTokens: config.rollout.maxNewTokens,
      temperature: config.rollout.temperature,
      topP: config.rollout.topP,
      topK: config.rollout.topK,
      seedForCall: (call) => mixSeed(seed, call),
    });
    const { trajectories } = await runRollouts(manager, generate, { ...agentFormatFromConfig(config), maxTurn: 1 });
    generate.release?.();
    const turns = trajectories.flatMap((t) => {
      const split = t.turns[0] ? splitResponse(t.turns[0].rawResponse) : null;
      return split ? [{ group: t.groupId, prompt: t.turns[0].prompt, ...split }] : [];
    });
    const pad = chatTokenIds(tokenizer).pad;
    const e = await answerEffects(
      turns,
      (text) => tokenizer.encode(text),
      (pairs) => continuationLogProbSums(model, pairs, { microBatchSize: 32, padId: pad }),
    );
    const cell = (v: number | undefined) => (v === undefined ? '-' : v.toFixed(3));
    const { mi, success } = runAt(modelDir);
    console.log(
      `| ${dir} | ${mi} | ${success} | ${turns.length} of ${trajectories.length} | ${cell(e?.own)} | ${cell(e?.reasoningEffect)}, ${cell(e?.reasoningEffectMedian)} | ${cell(e?.boardEffect)} |`,
    );
  } finally {
    model.dispose();
  }
}
