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
// Then a summary line (window means), then the first-turn reasoning and answer of the logged sample rollouts at a few steps (rollouts.jsonl).
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
  console.log(
    `${r.step} | ${f(num(r[`${P}/mi_estimate`]))} (${above >= 0 ? '+' : ''}${f(above)}) | ` +
      `${f(num(r['reasoning/grounding']) - num(r['reasoning/grounding_blind']))} | ` +
      `${pct(smooth.get(r.step) ?? NaN)} (${pct(num(r[`train/${tag}/success`]))}) | ${f(num(r['reasoning_length/mean']), 1)} | ` +
      `${pct(num(r['reasoning/unique_fraction']))} | ${pct(num(r['reasoning/valid_thinking_rate']))}`,
  );
}

// One line for the doc's table: MI and grounding averaged over step 1, steps 10-30 and the last 20 steps (the windows
// of lesson-mi-verdict.ts), the 5-step success's peak and its last value.
const measured = rows.filter((x) => Number.isFinite(num(x[`${P}/mi_estimate`])));
const mean = (key: (r: (typeof rows)[number]) => number, from: number, to: number) => {
  const v = measured
    .filter((r) => r.step >= from && r.step <= to)
    .map(key)
    .filter((x) => !Number.isNaN(x));
  return v.length ? v.reduce((a, b) => a + b, 0) / v.length : NaN;
};
const mi = (r: (typeof rows)[number]) => num(r[`${P}/mi_estimate`]);
const ground = (r: (typeof rows)[number]) => num(r['reasoning/grounding']) - num(r['reasoning/grounding_blind']);
const last = rows[rows.length - 1].step;
const windows: [number, number][] = [
  [1, 1],
  [10, 30],
  [last - 20, last],
];
const peak = [...smooth].reduce((best, s) => (s[1] > best[1] ? s : best), [0, -1]);
console.log(
  `\nsummary (step 1 / steps 10-30 / last 20 steps of ${last}): MI ${windows.map((w) => f(mean(mi, ...w))).join(' / ')}; ` +
    `ground ${windows.map((w) => f(mean(ground, ...w))).join(' / ')}; success 5-step ${pct(smooth.get(1) ?? NaN)} -> ` +
    `peak ${pct(peak[1])} (step ${peak[0]}) -> ${pct(smooth.get(last) ?? NaN)}`,
);

const file = path.join(run, 'rollouts.jsonl');
if (fs.existsSync(file)) {
  const records = fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as RolloutRecord)
    .filter((r) => r.split === 'train');
  const lastLogged = Math.max(...records.map((r) => r.step));
  // Does the answer follow the reasoning? Over every turn of the sample rollouts whose reasoning states where the goal
  // lies ("the goal is straight up of me", "down and to the left of me"): the share whose first move is one of the
  // directions it states (reasoning/answer_agreement is not logged here: the warm start's reasoning never names a move).
  const goalWords = (think: string) =>
    /goal is (?:straight )?(up|down|left|right)(?: and (?:to the )?(left|right))?/i
      .exec(think)
      ?.slice(1)
      .filter(Boolean)
      .map((w) => w.toLowerCase());
  const follows: string[] = [];
  for (let from = 1; from <= lastLogged; from += 20) {
    const turns = records
      .filter((r) => r.step >= from && r.step < from + 20)
      .flatMap((r) => r.turns)
      .map((t) => ({ words: goalWords(t.think), move: t.actions[0]?.toLowerCase() }))
      .filter((t) => t.words && t.move);
    follows.push(
      `${from}-${Math.min(from + 19, lastLogged)}: ${pct(turns.filter((t) => t.words!.includes(t.move!)).length / turns.length)} of ${turns.length}`,
    );
  }
  console.log(`first move is a direction the reasoning gives the goal, sample rollouts: ${follows.join(' | ')}`);
  const last = lastLogged;
  const steps = sampleArgs.length ? sampleArgs.map(Number) : [1, Math.round(last / 2), last];
  for (const step of steps) {
    console.log(`\nstep ${step}, first turns of the sample rollouts:`);
    for (const r of records.filter((x) => x.step === step)) {
      const t = r.turns[0];
      const player = /Player: (\(\d, \d\))/.exec(t.state)?.[1],
        goal = /Goal: (\(\d, \d\))/.exec(t.state)?.[1];
      console.log(
        `  player ${player} goal ${goal}: "${t.think}" -> ${JSON.stringify(t.answer)}${r.success ? ' (success)' : ''}`,
      );
    }
  }
}
