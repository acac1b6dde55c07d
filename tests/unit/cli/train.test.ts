// `ragen train` as a user runs it (spawning bin/ragen.js): bad input stops before any work with exit 2 and a message
// naming the problem (most of those cases through main() in-process); a run writes its directory; a killed run resumed with --resume has every step exactly once.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../../../src/model/backend';
import { loadCheckpointDir, saveCheckpointDir } from '../../../src/model/checkpointDir';
import { readMetricsJsonl } from '../../../src/metrics/jsonlSink';
import { requiredMetricKeys } from '../../../src/metrics/keys';
import { formatDuration } from '../../../src/metrics/pace';
import { tinyBanditConfig, tinyPolicy } from '../starpo/trainer-fixture';
import { resolveTrainArms } from '../../../src/cli/train';
import { ragenProcess } from '../ragenProcess';
import { expectRefused, ragen as ragenInProcess } from './cli-fixture';

let tmp: string;
let configFile: string;

const ragen = (...args: string[]) => ragenProcess(tmp, args);

beforeAll(async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ragen-train-'));
  await initBackend('cpu');
  const { model, tokenizer } = tinyPolicy();
  await saveCheckpointDir(path.join(tmp, 'tiny-model'), model, tokenizer);
  model.dispose();
  // A complete config file: the tiny Bandit run on the tiny random model, 4 steps, checkpoints every 2.
  const config = tinyBanditConfig({ trainer: { totalSteps: 4, saveFreq: 2, testFreq: 2 } });
  configFile = path.join(tmp, 'tiny.yaml');
  fs.writeFileSync(
    configFile,
    JSON.stringify({ ...config, model: { ...config.model, path: path.join(tmp, 'tiny-model') } }),
  );
});

afterAll(() => {
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

describe('ragen train: bad input stops before any work (exit 2, named in the message)', () => {
  it('rejects an unknown preset, an unknown key, a wrongly typed value, a bad flag and a missing warm start', async () => {
    fs.writeFileSync(path.join(tmp, 'typo.yaml'), 'actor:\n  clip_ratio_high: 0.3\n');
    const cases: [string[], RegExp][] = [
      [['--preset', 'bandit-tinyy'], /unknown preset 'bandit-tinyy'.*did you mean 'bandit-tiny'/],
      [['--preset', 'bandit-tiny', '--set', 'actor.entropyCoef=0.01'], /unknown config key 'actor\.entropyCoef'/],
      [['--preset', 'bandit-tiny', '--set', 'actor.lr=fast'], /actor\.lr.*expected number/],
      [['--preset', 'bandit-tiny', '--config', 'typo.yaml'], /actor\.clip_ratio_high.*did you mean 'clipRatioHigh'/],
      [['--preset', 'bandit-tiny', '--steps', '2.5'], /--steps must be an integer/],
      [
        ['--preset', 'echo-trap', '--arm', 'starpo-z'],
        /preset 'echo-trap' has no arm 'starpo-z' \(arms: starpo, starpo-s\)/,
      ],
      [
        ['--preset', 'bandit-tiny', '--set', 'model.warmStart=warmstart/none'],
        /no warm-start checkpoint at public\/warmstart\/none.*ragen warmstart --preset none/,
      ],
    ];
    // The first as a user meets it (the real command: exit code and stderr), the rest through main() in this process:
    // the same code path without a Node start and a tfjs load per case.
    const [first, ...rest] = cases;
    const spawned = await ragen('train', ...first[0], '--out', 'bad-run');
    expect(spawned.code).toBe(2);
    expect(spawned.stderr).toMatch(first[1]);
    expect(`${spawned.stdout}${spawned.stderr}`).not.toMatch(/^backend:/m); // nothing started
    const cwd = process.cwd();
    process.chdir(tmp);
    try {
      for (const [args, pattern] of rest) {
        const r = await ragenInProcess('train', ...args, '--out', 'bad-run');
        expectRefused(r, pattern);
        expect(r.out).not.toMatch(/^backend:/m); // nothing started
      }
    } finally {
      process.chdir(cwd);
    }
    expect(fs.existsSync(path.join(tmp, 'bad-run'))).toBe(false);
  });
});

describe('ragen train --arm', () => {
  it('picks one arm of a multi-arm preset, in the same directory the whole preset would use', () => {
    const out = path.join(tmp, 'arms');
    const both = resolveTrainArms({ preset: 'echo-trap', out, set: [] });
    const one = resolveTrainArms({ preset: 'echo-trap', out, set: [], arm: 'starpo-s' });
    expect(both.map((a) => a.name)).toEqual(['starpo', 'starpo-s']);
    expect(one).toEqual([both[1]]);
    expect(one[0].out).toBe(path.join(out, 'starpo-s'));
  });
});

describe('ragen train: a run, a kill, a resume', () => {
  it('writes the run directory, and --resume after a kill leaves every step in metrics.jsonl exactly once', async () => {
    const first = await ragen('train', '--config', configFile, '--out', 'run', '--backend', 'wasm');
    expect(first.code, first.stderr).toBe(0);
    const out = path.join(tmp, 'run');
    for (const f of ['config.json', 'metrics.jsonl', 'rollouts.jsonl', 'checkpoints/step-2', 'checkpoints/step-4']) {
      expect(fs.existsSync(path.join(out, f)), f).toBe(true);
    }
    const rows = readMetricsJsonl(path.join(out, 'metrics.jsonl'));
    expect(rows.map((r) => r.step)).toEqual([0, 1, 2, 3, 4]);
    // Each step's line ends with the time the run has left at the pace of its last steps (none after the last).
    const stepLines = first.stdout.split('\n').filter((l) => /^step \d+\/4 /.test(l));
    expect(stepLines).toHaveLength(4);
    for (const [i, line] of stepLines.slice(0, 3).entries()) {
      const times = rows.slice(1, i + 2).map((r) => r['timing_s/step'] as number);
      const left = (4 - (i + 1)) * (times.reduce((a, b) => a + b, 0) / times.length);
      expect(line).toMatch(new RegExp(`s/step  about ${formatDuration(left)} left$`));
    }
    expect(stepLines[3]).toMatch(/ s\/step$/);
    // The columns are explained once, before the first step line; the run ends with the commands to try next.
    expect(first.stdout.indexOf('\ncolumns: ')).toBeLessThan(first.stdout.indexOf(stepLines[0]));
    expect(first.stdout.split('\n').filter((l) => l.startsWith('columns: '))).toHaveLength(1);
    expect(first.stdout).toContain(`next: npx ragen eval --checkpoint ${path.join('run', 'checkpoints', 'step-4')} `);
    expect(first.stdout).not.toMatch(/^warning: .*clip-higher/m); // a note for the docs, nothing to act on
    const missing = requiredMetricKeys({
      trainTags: ['Bandit'],
      valTags: ['Bandit', 'BanditTest'],
      hasCritic: true,
    }).filter((k) => !rows.some((r) => k in r));
    expect(missing).toEqual([]);
    expect(
      rows.slice(1).every((r) => Number.isFinite(r['actor/pg_loss']) && Number.isFinite(r['critic/vf_loss'])),
    ).toBe(true);
    // The checkpoint is a Hugging Face Qwen2 directory.
    const ckpt = await loadCheckpointDir(path.join(out, 'checkpoints/step-4'));
    expect(ckpt.valueHead).toBe(false);
    Object.values(ckpt.weights).forEach((t) => t.dispose());
    // Running again into the same directory without --resume is refused.
    const again = await ragen('train', '--config', configFile, '--out', 'run');
    expect(again.code).toBe(2);
    expect(again.stderr).toMatch(/already holds a run.*--resume/);

    // Simulate a kill after step 3: the step-4 checkpoint was never written, metrics.jsonl ends with step 3 and a torn line.
    const killed = path.join(tmp, 'killed');
    fs.cpSync(out, killed, { recursive: true });
    fs.rmSync(path.join(killed, 'checkpoints/step-4'), { recursive: true });
    const lines = fs.readFileSync(path.join(out, 'metrics.jsonl'), 'utf8').split('\n').filter(Boolean);
    fs.writeFileSync(path.join(killed, 'metrics.jsonl'), lines.slice(0, 4).join('\n') + '\n' + lines[4].slice(0, 40));

    const resumed = await ragen('train', '--resume', '--out', 'killed');
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stdout).toMatch(/resuming .*killed from checkpoint step 2/);
    const after = readMetricsJsonl(path.join(killed, 'metrics.jsonl'));
    expect(after.map((r) => r.step)).toEqual([0, 1, 2, 3, 4]);
    // Same seeds, restored optimizer and weights: steps 3 and 4 are re-run exactly as the uninterrupted run.
    const strip = (r: Record<string, unknown>) =>
      Object.fromEntries(Object.entries(r).filter(([k]) => !k.startsWith('timing_s/') && k !== 'perf/throughput'));
    expect(after.map(strip)).toEqual(rows.map(strip));
    const rolloutSteps = (dir: string) =>
      fs
        .readFileSync(path.join(dir, 'rollouts.jsonl'), 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l).step as number);
    expect(rolloutSteps(killed)).toEqual(rolloutSteps(out)); // sample trajectories: none lost, none duplicated
    expect(fs.existsSync(path.join(killed, 'checkpoints/step-4'))).toBe(true);
  });
});
