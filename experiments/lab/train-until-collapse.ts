// Runs one `ragen train` command and stops it K steps after vanilla's collapse, for lesson-lab.sh's
// STOP_AFTER_COLLAPSE=K. A collapsed vanilla run spends its remaining steps generating its full token budget of
// noise, the slowest steps of a lesson check, and nothing the verdicts read comes after the collapse: the collapse step
// and the MI before it (lesson-mi-verdict.ts) are the same whether the run goes on or not. Only the "final" success
// changes meaning: it is the success K steps after the collapse, not at the last step.
//
// The collapse is lessonVerdict's (experiments/lib/lessonVerdict.ts: the 5-step mean training success at half its best
// so far or less, once the run has improved), read from the run's metrics.jsonl while it trains. When the run is
// stopped, RUN_DIR/stopped-after-collapse.json says where, and this exits 0 (lesson-lab.sh then marks the run done).
// A run that never collapses trains to its last step, and this exits with its exit code.
//   npx tsx experiments/lab/train-until-collapse.ts K RUN_DIR node bin/ragen.js train --preset ... --arm starpo ...
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { readMetrics, trainTag } from '../lib/analysis';
import { vanillaVerdict } from '../lib/lessonVerdict';

const [kText, runDir, ...command] = process.argv.slice(2);
const k = Number(kText);
if (!Number.isInteger(k) || k < 0 || !runDir || command.length === 0) {
  throw new Error('usage: npx tsx experiments/lab/train-until-collapse.ts K RUN_DIR COMMAND... (K: steps to keep after the collapse, an integer >= 0)');
}
// How often metrics.jsonl is read (TRAIN_UNTIL_COLLAPSE_POLL_MS: the test polls faster than a lesson step takes).
const POLL_MS = Number(process.env.TRAIN_UNTIL_COLLAPSE_POLL_MS ?? 3000);

const child = spawn(command[0], command.slice(1), { stdio: 'inherit' });
let stopped: { collapseStep: number; lastStep: number } | null = null;

/** The run's collapse step and last step so far, or null while it has not collapsed (or logged no training step yet). */
function collapseSoFar(): { collapseStep: number; lastStep: number } | null {
  const rows = readMetrics(runDir);
  if (trainTag(rows) === null) return null;
  const { collapseStep } = vanillaVerdict(rows);
  return collapseStep === null ? null : { collapseStep, lastStep: rows[rows.length - 1].step };
}

const timer = setInterval(() => {
  if (stopped) return;
  const seen = collapseSoFar();
  if (seen && seen.lastStep >= seen.collapseStep + k) {
    stopped = seen;
    fs.writeFileSync(path.join(runDir, 'stopped-after-collapse.json'), JSON.stringify({ ...seen, keptSteps: k }, null, 2) + '\n');
    console.log(`train-until-collapse: collapsed at step ${seen.collapseStep}; stopping after step ${seen.lastStep}`);
    child.kill('SIGTERM');
  }
}, POLL_MS);

child.on('exit', (code, signal) => {
  clearInterval(timer);
  if (stopped) process.exit(0);
  if (signal) console.error(`train-until-collapse: the run ended on ${signal}`);
  process.exit(code ?? 1);
});
