// Issue 34, item 2, on FrozenLake without slipping (experiments/lab/echo-trap-frozenlake.yaml): for one run, at step 1
// and at every step the collapse diagnostics measured (collapse.computeFreq), the input dependence of the reasoning
// beside the success, so the order of events can be read off:
//   MI        first-turn mi_estimate (nats; at most log 8 = 2.08 over the 8 env groups) and retrieval accuracy above
//             chance, in brackets (RAGEN-2's signal);
//   ground    reasoning/grounding - reasoning/grounding_blind: the share of the reasoning's checkable claims about
//             the board (position, goal direction, holes) that are true of this state, minus the share true of
//             another state of the batch (src/metrics/grounding.ts): an input-dependence measure of this env;
//   success   training-batch success, 5-step moving average (the lesson's curve), and this step's raw value;
//   think     mean reasoning length (tokens), share of distinct reasoning texts, share of turns with valid reasoning.
// Then the first-turn reasoning and answer of the logged sample rollouts at a few steps (rollouts.jsonl).
//   npx tsx experiments/lab/noslip-series.ts runs/noslip/lr5e-4/seed-0/starpo [STEP ...]
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { RolloutRecord } from '../../src/metrics/rolloutRecord';
import { movingAverage, readMetrics, series, trainTag } from '../lib/analysis';

const [run, ...sampleArgs] = process.argv.slice(2);
if (!run) throw new Error('usage: npx tsx experiments/lab/noslip-series.ts RUN_DIR [STEP ...]');
const rows = readMetrics(run).filter((r) => r.step >= 1);
const tag = trainTag(rows);
if (!tag) throw new Error(`${run}: no train/<tag>/success metric yet`);
const smooth = new Map(movingAverage(series(rows, `train/${tag}/success`), 5));
const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : NaN);
const f = (v: number, d = 2) => (Number.isNaN(v) ? '-' : v.toFixed(d));
const pct = (v: number) => (Number.isNaN(v) ? '-' : `${Math.round(100 * v)} %`);
const P = 'collapse_first_turn_sample';

console.log('step | MI (retrieval above chance) | ground | success 5-step (raw) | think length | distinct | valid');
for (const r of rows.filter((x) => `${P}/mi_estimate` in x)) {
  const above = num(r[`${P}/retrieval_accuracy`]) - num(r[`${P}/retrieval_chance_level`]);
  console.log(`${r.step} | ${f(num(r[`${P}/mi_estimate`]))} (${above >= 0 ? '+' : ''}${f(above)}) | ` +
    `${f(num(r['reasoning/grounding']) - num(r['reasoning/grounding_blind']))} | ` +
    `${pct(smooth.get(r.step) ?? NaN)} (${pct(num(r[`train/${tag}/success`]))}) | ${f(num(r['reasoning_length/mean']), 1)} | ` +
    `${pct(num(r['reasoning/unique_fraction']))} | ${pct(num(r['reasoning/valid_thinking_rate']))}`);
}

const file = path.join(run, 'rollouts.jsonl');
if (fs.existsSync(file)) {
  const records = fs.readFileSync(file, 'utf8').split('\n').filter(Boolean)
    .map((line) => JSON.parse(line) as RolloutRecord).filter((r) => r.split === 'train');
  const last = Math.max(...records.map((r) => r.step));
  const steps = sampleArgs.length ? sampleArgs.map(Number) : [1, Math.round(last / 2), last];
  for (const step of steps) {
    console.log(`\nstep ${step}, first turns of the sample rollouts:`);
    for (const r of records.filter((x) => x.step === step)) {
      const t = r.turns[0];
      const player = /Player: (\(\d, \d\))/.exec(t.state)?.[1], goal = /Goal: (\(\d, \d\))/.exec(t.state)?.[1];
      console.log(`  player ${player} goal ${goal}: "${t.think}" -> ${JSON.stringify(t.answer)}${r.success ? ' (success)' : ''}`);
    }
  }
}
