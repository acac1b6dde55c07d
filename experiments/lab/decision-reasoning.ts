// What the reasoning says in the two-name-pair lesson variants (issue 34, item 2): per name pair and window of
// training steps, from a run's sample rollouts (rollouts.jsonl, one trajectory per logged env group), how often the
// answer pays, how often the reasoning names an arm of the OTHER pair (a template pooled over both pairs, not a
// reading of this prompt), and how often the arm the reasoning picks ("... pick X" / "choose X") is the answer.
// A readable companion to the MI estimate, which says only how well the reasoning identifies its prompt. Then the
// trainer's own reasoning/answer_agreement (over the whole batch, both pairs; metrics.jsonl) at each step of step 1 and
// every fifth step.
//   npx tsx experiments/lab/decision-reasoning.ts runs/decision/lr20/seed-0/starpo [WINDOW=10]
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { RolloutRecord } from '../../src/metrics/rolloutRecord';
import { readMetrics } from '../lib/analysis';

const PAIRS = [
  ['Phoenix', 'Dragon'],
  ['Teacher', 'Engineer'],
] as const;

const run = process.argv[2];
const width = Number(process.argv[3] ?? 10);
if (!run || !(width >= 1)) throw new Error('usage: npx tsx experiments/lab/decision-reasoning.ts RUN_DIR [WINDOW]');
const records = fs
  .readFileSync(path.join(run, 'rollouts.jsonl'), 'utf8')
  .split('\n')
  .filter(Boolean)
  .map((line) => JSON.parse(line) as RolloutRecord)
  .filter((r) => r.split === 'train');

const pct = (k: number, n: number) => (n ? `${Math.round((100 * k) / n)} %` : '-');
console.log('steps | pair | n | success | reasoning names the other pair | reasoning picks the answered arm');
const last = Math.max(0, ...records.map((r) => r.step));
// Step 1 alone (the warm start's behaviour), then windows of `width` steps.
const windows: [number, number][] = [[1, 1]];
for (let from = 2; from <= last; from += width) windows.push([from, Math.min(from + width - 1, last)]);
for (const [from, to] of windows) {
  for (const [p, names] of PAIRS.entries()) {
    const other = PAIRS[1 - p];
    const rows = records.filter(
      (r) => r.step >= from && r.step <= to && names.some((n) => r.turns[0].state.includes(`named ${n}`)),
    );
    if (rows.length === 0) continue;
    const mentions = rows.filter((r) => other.some((n) => r.turns[0].think.includes(n))).length;
    const withPick = rows
      .map((r) => ({ pick: /(?:pick|choose) (\w+)/.exec(r.turns[0].think)?.[1], answer: r.turns[0].actions[0] }))
      .filter((x) => x.pick !== undefined && x.answer !== undefined);
    const agree = withPick.filter((x) => x.pick === x.answer).length;
    console.log(
      `${from === to ? from : `${from}-${to}`} | ${names.join('/')} | ${rows.length} | ${pct(rows.filter((r) => r.success).length, rows.length)} | ` +
        `${pct(mentions, rows.length)} | ${pct(agree, withPick.length)} of ${withPick.length}`,
    );
  }
}

const agreement = readMetrics(run)
  .filter((r) => (r.step === 1 || r.step % 5 === 0) && Number.isFinite(r['reasoning/answer_agreement']))
  .map((r) => `${r.step}: ${(100 * (r['reasoning/answer_agreement'] as number)).toFixed(0)} %`);
console.log(
  `\nreasoning/answer_agreement, whole batch (steps without a reasoning that picks an arm left out): ${agreement.join(' | ')}`,
);
