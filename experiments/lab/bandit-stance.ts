// Does a Bandit answer follow the argument of its reasoning, not just the arm the reasoning names? Reads the
// trajectories of `ragen eval --trajectories` and classifies each response's closing argument as risk-seeking ("big
// rewards need risk", "I take the chance") or risk-averse ("a sure reward is better", "I avoid the risk"); an answer
// agrees with its argument when risk-seeking goes with the high-risk arm and risk-averse with the other.
//   npx tsx experiments/lab/bandit-stance.ts FILE.jsonl [--hi Dragon]
import * as fs from 'node:fs';
import { wilsonInterval } from '../../src/eval/stats';

const file = process.argv[2];
const hi = process.argv.includes('--hi') ? process.argv[process.argv.indexOf('--hi') + 1] : 'Dragon';
const SEEKING = /pay more|take the chance|big rewards|higher average|need risk/i;
const AVERSE = /prefer an? |always pays|\bavoid\b|sure reward/i;

let argued = 0,
  agreed = 0,
  total = 0;
for (const line of fs.readFileSync(file, 'utf8').trim().split('\n')) {
  const episode = JSON.parse(line) as { suite: string; turns: { think: string; answer: string }[] };
  if (episode.suite !== 'Bandit') continue;
  for (const turn of episode.turns) {
    total++;
    const argument = turn.think.slice(turn.think.indexOf('. ') + 2); // after the opening sentence about the names
    const averse = AVERSE.test(argument),
      seeking = SEEKING.test(argument) && !averse;
    if (!averse && !seeking) continue;
    argued++;
    if (seeking === (turn.answer.trim() === hi)) agreed++;
  }
}
const ci = wilsonInterval(agreed, argued);
console.log(
  `${file}: ${argued} of ${total} responses argue a stance; the answer follows it in ${agreed} ` +
    `(${((100 * agreed) / argued).toFixed(1)} % [${(100 * ci.lo).toFixed(1)}, ${(100 * ci.hi).toFixed(1)}])`,
);
