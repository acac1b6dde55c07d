// `ragen eval` as a user runs it (spawning bin/ragen.js), on two real tiny checkpoints (random weights, so their
// success is ~0): bad input exits 2 naming the problem; the same checkpoint as its own baseline gives zero deltas
// (determinism) and passes a zero-tolerance gate; a baseline that was better fails the gate with exit 1 naming the
// suite. Also: how a checkpoint directory finds its run config.
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../../../src/model/backend';
import { saveCheckpointDir } from '../../../src/model/checkpointDir';
import { parseSafetensors, serializeSafetensors } from '../../../src/model/safetensors';
import { resolveCheckpoint } from '../../../src/eval/load';
import { parseScorecardJson } from '../../../src/eval/scorecard';
import { tinyBanditConfig, tinyPolicy } from '../starpo/trainer-fixture';

const run = promisify(execFile);
const BIN = path.resolve('bin/ragen.js');
let tmp: string;

async function ragen(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [BIN, ...args], { cwd: tmp, timeout: 120_000 });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

// Small and quick: 4 seeds of each Bandit suite, one rollout each, wasm.
const COMMON = ['--preset', 'bandit-tiny', '--episodes', '4', '--backend', 'wasm', '--quiet'];

beforeAll(async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ragen-eval-'));
  await initBackend('cpu');
  for (const [name, seed] of [['model-a', 7], ['model-b', 8]] as const) {
    const { model, tokenizer } = tinyPolicy(seed);
    await saveCheckpointDir(path.join(tmp, name), model, tokenizer);
    model.dispose();
  }
  // A checkpoint with one NaN weight (a diverged run): eval must refuse it, not score NaN log-probs.
  fs.cpSync(path.join(tmp, 'model-a'), path.join(tmp, 'model-nan'), { recursive: true });
  const weightsFile = path.join(tmp, 'model-nan', 'model.safetensors');
  const { tensors } = parseSafetensors(new Uint8Array(fs.readFileSync(weightsFile)));
  tensors['model.norm.weight'].data[3] = NaN;
  fs.writeFileSync(weightsFile, serializeSafetensors(tensors));
});

afterAll(() => {
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

describe('ragen eval: bad input exits 2 and names it', () => {
  it('missing checkpoint dir, unknown env, bad numbers, a gate without a baseline, a bare model without --preset', async () => {
    const cases: [string[], RegExp][] = [
      [['--checkpoint', 'no-such-dir'], /checkpoint directory no-such-dir does not exist/],
      [['--checkpoint', 'model-a', '--preset', 'bandit-tiny', '--env', 'Chess'], /unknown env tag 'Chess'/],
      [['--checkpoint', 'model-a', '--preset', 'bandit-tiny', '--episodes', '0'], /--episodes must be an integer >= 1/],
      [['--checkpoint', 'model-a', '--preset', 'bandit-tiny', '--fail-on-regression', '5'], /--fail-on-regression needs --baseline/],
      [['--checkpoint', 'model-a'], /cannot tell which run model-a belongs to.*--preset NAME/],
      [['--checkpoint', 'model-a', '--preset', 'bandit-tiny', '--baseline', 'gone'], /--baseline gone does not exist/],
      [[], /required option '--checkpoint <dir>'/],
      // Found before any episode is played: an --out that is a directory, a dialogue longer than the model's positions.
      [['--checkpoint', 'model-a', '--preset', 'bandit-tiny', '--out', 'model-b'], /--out model-b is a directory, not a file/],
      [['--checkpoint', 'model-nan', '--preset', 'bandit-tiny', '--backend', 'wasm'], /tensor 'model\.norm\.weight' in model\.safetensors has 1 non-finite value.*\(in .*model-nan\)/],
      [['--checkpoint', 'model-a', '--preset', 'sokoban-tiny'], /suite SimpleSokoban: 3 turns of up to 64 new tokens can grow the dialogue to about \d+ tokens, more than the model's 512 positions/],
    ];
    const results = await Promise.all(cases.map(([args]) => ragen('eval', ...args)));
    results.forEach((r, i) => {
      expect(r.code, cases[i][0].join(' ')).toBe(2);
      expect(r.stderr).toMatch(cases[i][1]);
    });
  }, 120_000);
});

describe('ragen eval: scorecards, baselines and the regression gate', () => {
  it('same checkpoint as baseline: zero deltas, gate 0 passes; a better baseline fails the gate with exit 1', async () => {
    const self = await ragen('eval', '--checkpoint', 'model-a', ...COMMON, '--baseline', 'model-a', '--baseline-preset', 'bandit-tiny',
      '--fail-on-regression', '0', '--out', 'a.json');
    expect(self.code, self.stderr).toBe(0);
    expect(self.stdout).toMatch(/suite\s+kind\s+success \[95% CI\]/);
    expect(self.stdout).toMatch(/against baseline model-a/);
    const card = JSON.parse(fs.readFileSync(path.join(tmp, 'a.json'), 'utf8'));
    expect(card.suites.map((s: { suite: string }) => s.suite)).toEqual(['Bandit', 'BanditTest', 'Bandit-Swapped']);
    expect(card.suites[0].episodes).toBe(4);
    for (const d of card.comparison.deltas) {
      expect(d.successPoints).toBe(0);
      expect(d.passAtKPoints).toBe(0);
    }

    // A baseline scorecard in which every episode of Bandit succeeded: the random model cannot match it.
    const better = parseScorecardJson(fs.readFileSync(path.join(tmp, 'a.json'), 'utf8'));
    better.suites[0].success = { rate: 1, lo: 0.4, hi: 1, successes: 4 };
    better.policy = 'perfect-bandit';
    fs.writeFileSync(path.join(tmp, 'better.json'), JSON.stringify(better));
    const actual = card.suites[0].success.rate as number;
    expect(actual).toBeLessThan(1);

    const [gated, lenient, other] = await Promise.all([
      ragen('eval', '--checkpoint', 'model-a', ...COMMON, '--baseline', 'better.json', '--fail-on-regression', '10'),
      ragen('eval', '--checkpoint', 'model-a', ...COMMON, '--baseline', 'better.json', '--fail-on-regression', '100'),
      ragen('eval', '--checkpoint', 'model-a', ...COMMON, '--baseline', 'model-b', '--baseline-preset', 'bandit-tiny', '--fail-on-regression', '100'),
    ]);
    expect(gated.code, gated.stderr).toBe(1);
    expect(gated.stderr).toMatch(/^ragen eval: success regressed by more than 10 points against better\.json \(scorecard of perfect-bandit\) in: Bandit \(-\d+\.\d points\)/);
    expect(gated.stderr).not.toMatch(/BanditTest|Bandit-Swapped/); // only the suite that dropped
    expect(gated.stderr).not.toMatch(/\n\s+at /); // a sentence, not a stack trace
    expect(gated.stdout).toMatch(/against baseline better\.json \(scorecard of perfect-bandit\)/); // the table is still printed
    expect(lenient.code, lenient.stderr).toBe(0);
    expect(other.code, other.stderr).toBe(0);
    expect(other.stdout).toMatch(/against baseline model-b/);
  }, 120_000);
});

describe('resolveCheckpoint', () => {
  it('finds the run config of a run directory, of one of its checkpoints, and of a warm-start directory', () => {
    const runDir = path.join(tmp, 'run');
    const step = path.join(runDir, 'checkpoints', 'step-2');
    fs.mkdirSync(step, { recursive: true });
    for (const f of fs.readdirSync(path.join(tmp, 'model-a'))) fs.copyFileSync(path.join(tmp, 'model-a', f), path.join(step, f));
    fs.writeFileSync(path.join(step, 'trainer_state.json'), '{}');
    fs.writeFileSync(path.join(runDir, 'config.json'), JSON.stringify(tinyBanditConfig({ agent: { valGroups: 2 } })));
    const fromRun = resolveCheckpoint(runDir);
    expect(fromRun.modelDir).toBe(step);
    expect(fromRun.config.agent.valGroups).toBe(2);
    expect(resolveCheckpoint(step).configSource).toMatch(/run config .*run\/config\.json/);
    expect(resolveCheckpoint(step, 'frozenlake-tiny').config.agent.trainEnvs[0].tag).toBe('FrozenLake');
    const warm = resolveCheckpoint('public/warmstart/bandit-tiny'.replace(/^/, path.resolve('.') + '/'));
    expect(warm.configSource).toMatch(/preset bandit-tiny/);
    expect(() => resolveCheckpoint(path.join(tmp, 'run', 'checkpoints'))).toThrow(/holds no model/);
  });
});
