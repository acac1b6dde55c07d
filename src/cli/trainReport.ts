// What `ragen train` says besides its numbers: what the step line's columns mean (printed once, before the first
// step), and the commands to try on the finished run (printed last).
import { BANDIT_DEFAULTS } from '../../envs/bandit';
import type { EnvBlock, RunConfig } from '../starpo/config';

/** The lines that explain the step line, for a run of `config`. */
export function stepLineLegend(config: RunConfig): string[] {
  const { testFreq, valBeforeTrain } = config.trainer;
  const when =
    testFreq > 0
      ? `${valBeforeTrain ? 'before training, then ' : ''}every ${testFreq} steps`
      : valBeforeTrain
        ? 'before training only (trainer.testFreq is 0)'
        : 'never (trainer.testFreq is 0)';
  const lines = [
    "columns:  success     share of the step's training episodes that succeeded",
    `          val <env>   validation success of each env, from the latest validation (${when})`,
    "          reward std  mean in-group std of the rewards (the paper's collapse signal: it falls when a group's",
    '                      rollouts stop differing)',
    "          entropy     the policy's mean token entropy",
    '          s/step      seconds per step',
  ];
  const banditTest = banditTestNote(config);
  if (banditTest) lines.push(...banditTest);
  return lines;
}

/** Names of a bandit env block's arms (its config over the tag's defaults). */
function armNames(block: EnvBlock, tag: 'Bandit' | 'BanditTest'): string {
  const names = { ...BANDIT_DEFAULTS[tag], ...(block.config ?? {}) } as { loArmName: unknown; hiArmName: unknown };
  return `${String(names.loArmName)} / ${String(names.hiArmName)}`;
}

/**
 * Why a tiny model trained on Bandit shows `BanditTest 0.00`: BanditTest is RAGEN's held-out bandit, the same game
 * with other arm names, and the tiny warm start only learns Bandit's names (docs/tiny-presets.md).
 */
function banditTestNote(config: RunConfig): string[] | null {
  const { trainEnvs, valEnvs } = config.agent;
  const test = valEnvs.find((b) => b.tag === 'BanditTest');
  const train = trainEnvs.find((b) => b.tag === 'Bandit');
  if (!test || !train || trainEnvs.some((b) => b.tag !== 'Bandit')) return null;
  const lines = [
    `BanditTest is RAGEN's held-out bandit: Bandit's game with other arm names (${armNames(test, 'BanditTest')}, not ${armNames(train, 'Bandit')}).`,
  ];
  // A tiny model starts from a warm start on Bandit's names; a Qwen checkpoint (model.path) reads any names.
  if (config.model.path === null && config.model.warmStart !== null) {
    lines.push(
      '  The tiny warm-started model answers with the training names and does not transfer to new ones',
      '  (docs/tiny-presets.md), so BanditTest 0.00 is expected.',
    );
  }
  return lines;
}

/** The commands to try next on finished runs: a scorecard of each run's newest checkpoint, and the playground. */
export function nextCommands(runs: readonly { out: string; checkpoint: string | null }[]): string[] {
  const evals = runs.filter((r) => r.checkpoint !== null).map((r) => `npx ragen eval --checkpoint ${r.checkpoint}`);
  const width = Math.max(0, ...evals.map((e) => e.length));
  const lines = evals.map(
    (e, i) =>
      `${i === 0 ? 'next: ' : '      '}${e.padEnd(width)}   # scorecard on held-out and out-of-distribution suites`,
  );
  const metrics = runs.map((r) => `${r.out}/metrics.jsonl`).join(', ');
  lines.push(
    `${lines.length ? '      ' : 'next: '}${'npm run dev'.padEnd(width)}   # the playground; its Runs panel imports ${metrics}`,
  );
  return lines;
}
