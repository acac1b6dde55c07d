// `ragen eval` as a user runs it (spawning bin/ragen.js), on two real tiny checkpoints (random weights, so their
// success is ~0): bad input exits 2 naming the problem (most of those cases through main() in-process); the same checkpoint as its own baseline gives zero deltas
// (determinism) and passes a zero-tolerance gate; a baseline that was better fails the gate with exit 1 naming the
// suite. The shipped bandit-tiny warm start shows the grounding table. Also: how a checkpoint directory finds its
// run config.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../../../src/model/backend';
import { saveCheckpointDir } from '../../../src/model/checkpointDir';
import { parseSafetensors, serializeSafetensors } from '../../../src/model/safetensors';
import { makeEnv, planFrozenLake, type FrozenLakeEnv } from '../../../envs/index';
import type { EpisodeRecord } from '../../../src/eval/episodes';
import { resolveCheckpoint } from '../../../src/eval/load';
import { parseScorecardJson } from '../../../src/eval/scorecard';
import { tinyBanditConfig, tinyPolicy } from '../starpo/trainer-fixture';
import { ragenProcess } from '../ragenProcess';
import { expectRefused, ragen as ragenInProcess } from '../cli/cli-fixture';

let tmp: string;

const ragen = (...args: string[]) => ragenProcess(tmp, args);

// Small and quick: 4 seeds of each Bandit suite, one rollout each, wasm.
const COMMON = ['--preset', 'bandit-tiny', '--episodes', '4', '--backend', 'wasm', '--quiet'];

beforeAll(async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ragen-eval-'));
  await initBackend('cpu');
  for (const [name, seed] of [
    ['model-a', 7],
    ['model-b', 8],
  ] as const) {
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
      [[], /required option '--checkpoint <dir>'/], // commander's own message
      [['--checkpoint', 'no-such-dir'], /checkpoint directory no-such-dir does not exist/],
      [['--checkpoint', 'model-a', '--preset', 'bandit-tiny', '--env', 'Chess'], /unknown env tag 'Chess'/],
      [['--checkpoint', 'model-a', '--preset', 'bandit-tiny', '--episodes', '0'], /--episodes must be an integer >= 1/],
      [
        ['--checkpoint', 'model-a', '--preset', 'bandit-tiny', '--fail-on-regression', '5'],
        /--fail-on-regression needs --baseline/,
      ],
      [['--checkpoint', 'model-a'], /cannot tell which run model-a belongs to.*--preset NAME/],
      [['--checkpoint', 'model-a', '--preset', 'bandit-tiny', '--baseline', 'gone'], /--baseline gone does not exist/],
      // Found before any episode is played: an --out that is a directory, a dialogue longer than the model's positions.
      [
        ['--checkpoint', 'model-a', '--preset', 'bandit-tiny', '--out', 'model-b'],
        /--out model-b is a directory, not a file/,
      ],
      [
        ['--checkpoint', 'model-nan', '--preset', 'bandit-tiny', '--backend', 'wasm'],
        /tensor 'model\.norm\.weight' in model\.safetensors has 1 non-finite value.*\(in .*model-nan\)/,
      ],
      [
        ['--checkpoint', 'model-a', '--preset', 'bandit-tiny', '--seed-start', '-1'],
        /--seed-start must be an integer >= 0, got '-1'/,
      ],
      [
        ['--checkpoint', 'model-a', '--preset', 'bandit-tiny', '--seed-start', '1.5'],
        /--seed-start must be an integer >= 0, got '1\.5'/,
      ],
      [
        ['--checkpoint', 'model-a', '--preset', 'bandit-tiny', '--trajectories', 'model-b'],
        /--trajectories model-b is a directory, not a file/,
      ],
      [
        ['--checkpoint', 'model-a', '--preset', 'bandit-tiny', '--trajectories', 'x.json', '--out', './x.json'],
        /--out and --trajectories name the same file/,
      ],
      [['--checkpoint', 'model-a', '--preset', 'bandit-tiny', '--set', 'agent.maxTurns=2'], /agent\.maxTurns/],
      [['--checkpoint', 'model-a', '--preset', 'bandit-tiny', '--set', 'agent.maxTurn'], /key=value/],
      [
        ['--checkpoint', 'model-a', '--preset', 'sokoban-qwen'],
        /suite SimpleSokoban: the first prompt is \d+ tokens, plus up to 400 new tokens \(rollout.maxNewTokens\) that is more than the model's 512 positions/,
      ],
    ];
    // Two as a user meets them (the real command, so its exit code and stderr), the rest through main() in this
    // process: the same code path without a Node start and a tfjs load per case.
    const spawned = await Promise.all(cases.slice(0, 2).map(([args]) => ragen('eval', ...args)));
    spawned.forEach((r, i) => {
      expect(r.code, cases[i][0].join(' ')).toBe(2);
      expect(r.stderr).toMatch(cases[i][1]);
    });
    const cwd = process.cwd();
    process.chdir(tmp);
    try {
      for (const [args, pattern] of cases.slice(2)) expectRefused(await ragenInProcess('eval', ...args), pattern);
    } finally {
      process.chdir(cwd);
    }
  }, 120_000);
});

describe('ragen eval: scorecards, baselines and the regression gate', () => {
  it('same checkpoint as baseline: zero deltas, gate 0 passes; a better baseline fails the gate with exit 1', async () => {
    const self = await ragen(
      'eval',
      '--checkpoint',
      'model-a',
      ...COMMON,
      '--baseline',
      'model-a',
      '--baseline-preset',
      'bandit-tiny',
      '--fail-on-regression',
      '0',
      '--out',
      'a.json',
    );
    expect(self.code, self.stderr).toBe(0);
    expect(self.stdout).toMatch(/suite\s+kind\s+success \[95% CI\]\s+optimum/);
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
      ragen(
        'eval',
        '--checkpoint',
        'model-a',
        ...COMMON,
        '--baseline',
        'model-b',
        '--baseline-preset',
        'bandit-tiny',
        '--fail-on-regression',
        '100',
      ),
    ]);
    expect(gated.code, gated.stderr).toBe(1);
    expect(gated.stderr).toMatch(
      /^ragen eval: success regressed by more than 10 points against better\.json \(scorecard of perfect-bandit\) in: Bandit \(-\d+\.\d points\)/,
    );
    expect(gated.stderr).not.toMatch(/BanditTest|Bandit-Swapped/); // only the suite that dropped
    expect(gated.stderr).not.toMatch(/\n\s+at /); // a sentence, not a stack trace
    expect(gated.stdout).toMatch(/against baseline better\.json \(scorecard of perfect-bandit\)/); // the table is still printed
    expect(lenient.code, lenient.stderr).toBe(0);
    expect(other.code, other.stderr).toBe(0);
    expect(other.stdout).toMatch(/against baseline model-b/);
  }, 120_000);
});

describe('ragen eval: is the reasoning about the state?', () => {
  it('the shipped bandit-tiny warm start: grounding columns with numbers for Bandit, - where nothing was checkable', async () => {
    const r = await ragen(
      'eval',
      '--checkpoint',
      path.resolve('public/warmstart/bandit-tiny'),
      '--episodes',
      '8',
      '--backend',
      'wasm',
      '--quiet',
      '--out',
      'bt.json',
    );
    expect(r.code, r.stderr).toBe(0);
    const card = parseScorecardJson(fs.readFileSync(path.join(tmp, 'bt.json'), 'utf8'));
    const header = /suite\s+grounding\s+state-blind\s+claims\/turn\s+answer agrees\n[- ]+\n((?:.+\n)+)/.exec(r.stdout);
    expect(header, r.stdout).not.toBeNull();
    const rows = new Map(
      header![1]
        .trimEnd()
        .split('\n')
        .map((line) => {
          const cells = line.trim().split(/\s+/);
          return [cells[0], cells.slice(1)] as const;
        }),
    );
    expect([...rows.keys()]).toEqual(['Bandit', 'BanditTest', 'Bandit-Swapped']);
    const pct = (x: number) => (Number.isFinite(x) ? `${(100 * x).toFixed(1)}%` : '-');
    for (const s of card.suites) {
      const g = s.grounding!;
      // The table prints what the JSON holds (null -> '-').
      expect(rows.get(s.suite), s.suite).toEqual([
        pct(g.rate),
        pct(g.blind),
        Number.isFinite(g.claimsPerTurn) ? g.claimsPerTurn.toFixed(2) : '-',
        pct(g.answerAgreement),
      ]);
    }
    // The warm start writes about Dragon and Phoenix: checkable on Bandit, where its reasoning also names the arm it
    // answers; BanditTest's arms are Trader and Librarian, which its reasoning never names.
    for (const cell of rows.get('Bandit')!) expect(cell).toMatch(/^\d+\.\d+%?$/);
    expect(card.suites[0].grounding!.claimsPerTurn).toBeGreaterThan(0);
    expect(rows.get('BanditTest')).toEqual(['-', '-', '0.00', '-']);
    expect(fs.readFileSync(path.join(tmp, 'bt.json'), 'utf8')).toMatch(/"answerAgreement": null/);
  }, 120_000);
});

describe('ragen eval --seed-start and --trajectories', () => {
  const readEpisodes = (file: string): EpisodeRecord[] =>
    fs
      .readFileSync(path.join(tmp, file), 'utf8')
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as EpisodeRecord);

  it('plays the states from --seed-start and writes every episode; replaying its actions reproduces its observations', async () => {
    // The shipped FrozenLake warm start: multi-turn episodes, on three seeds of each FrozenLake suite.
    const checkpoint = path.resolve('public/warmstart/frozenlake-tiny');
    const r = await ragen(
      'eval',
      '--checkpoint',
      checkpoint,
      '--env',
      'FrozenLake',
      '--episodes',
      '3',
      '--seed-start',
      '500',
      '--backend',
      'wasm',
      '--quiet',
      '--out',
      'lake.json',
      '--trajectories',
      'lake.jsonl',
    );
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/protocol: 3 seeds from 500 x 1 rollout/);
    const card = parseScorecardJson(fs.readFileSync(path.join(tmp, 'lake.json'), 'utf8'));
    expect(card.protocol.baseSeed).toBe(500);
    const episodes = readEpisodes('lake.jsonl');
    expect(episodes).toHaveLength(card.suites.length * 3);
    expect(fs.readdirSync(tmp).filter((n) => n.startsWith('lake.jsonl.'))).toEqual([]); // no temp sibling left
    for (const s of card.suites) {
      const mine = episodes.filter((e) => e.suite === s.suite);
      expect(
        mine.map((e) => e.seed),
        s.suite,
      ).toEqual([500, 501, 502]);
      expect(mine.filter((e) => e.success).length, s.suite).toBe(s.success.successes);
    }
    let turns = 0;
    let withText = 0;
    for (const e of episodes) {
      expect(e.policy).toBe(checkpoint);
      expect(e.rollout).toBe(0);
      // Replaying the executed actions on a fresh env of the same tag, config and seed gives every observation,
      // reward and the outcome that were written.
      const env = makeEnv(e.tag, e.config ?? undefined);
      expect(e.turns[0].state).toBe(env.reset(e.seed));
      let done = false;
      e.turns.forEach((turn, i) => {
        turns++;
        expect(turn.state, `${e.suite} seed ${e.seed} turn ${turn.turn}`).toBe(env.render());
        if (turn.think.length + turn.answer.length > 0) withText++;
        let reward = 0;
        for (const action of turn.actions) {
          const step = env.step(action);
          reward += step.reward;
          done = step.done;
        }
        expect(turn.reward).toBeCloseTo(reward, 12);
        expect(turn.turn).toBe(i + 1);
      });
      expect(e.finalState).toBe(env.render());
      expect(e.numActions).toBe(e.turns.reduce((n, t) => n + t.actions.length, 0));
      expect(e.success).toBe(done && e.reward > 0);
    }
    expect(turns).toBeGreaterThan(episodes.length); // multi-turn episodes were written whole
    // The responses are written too (on a lake unlike its training, such as 6x6, a turn may come back empty).
    expect(withText).toBeGreaterThan(turns / 2);
    // The ceiling next to the agent: on ice without slips, the lakes of these seeds whose goal is within the
    // 10-action budget (5 turns x 5 actions can send all 10).
    let reachable = 0;
    for (const seed of [500, 501, 502]) {
      const env = makeEnv('FrozenLake', { successRate: 1 }) as FrozenLakeEnv;
      env.reset(seed);
      reachable += planFrozenLake(env.map, 1, 10).successProbability(env.map.start, 10);
    }
    expect(card.suites.find((s) => s.suite === 'FrozenLake-NoSlip')?.optimum).toBe(reachable / 3);
    expect(r.stdout).toMatch(/success \[95% CI\]\s+optimum/);
  }, 120_000);

  it('--set overrides the run config it plays with (here one turn per episode) and says so', async () => {
    const checkpoint = path.resolve('public/warmstart/frozenlake-tiny');
    const common = ['--checkpoint', checkpoint, '--env', 'FrozenLake', '--episodes', '4', '--backend', 'wasm'];
    const [plain, oneTurn] = await Promise.all([
      ragen('eval', ...common, '--quiet', '--trajectories', 'plain.jsonl'),
      ragen('eval', ...common, '--set', 'agent.maxTurn=1', '--trajectories', 'one-turn.jsonl'),
    ]);
    expect(plain.code, plain.stderr).toBe(0);
    expect(oneTurn.code, oneTurn.stderr).toBe(0);
    expect(oneTurn.stderr).toMatch(/\(preset frozenlake-tiny \(from warmstart\.json\), --set agent\.maxTurn=1\)/);
    expect(readEpisodes('plain.jsonl').some((e) => e.turns.length > 1)).toBe(true);
    expect(readEpisodes('one-turn.jsonl').every((e) => e.turns.length === 1)).toBe(true);
  }, 120_000);

  it("defaults to the run's agent.seedVal; a failing evaluation leaves an existing file as it was", async () => {
    const ok = await ragen('eval', '--checkpoint', 'model-a', ...COMMON, '--k', '2', '--trajectories', 'bandit.jsonl');
    expect(ok.code, ok.stderr).toBe(0);
    const episodes = readEpisodes('bandit.jsonl');
    expect(episodes).toHaveLength(3 * 4 * 2); // 3 suites x 4 seeds x 2 rollouts
    expect([...new Set(episodes.map((e) => e.seed))].sort()).toEqual([123, 124, 125, 126]);
    expect(episodes.filter((e) => e.seed === 123 && e.suite === 'Bandit').map((e) => e.rollout)).toEqual([0, 1]);
    expect(episodes.find((e) => e.suite === 'Bandit-Swapped')!.config).toEqual({
      loArmName: 'Dragon',
      hiArmName: 'Phoenix',
    });

    fs.writeFileSync(path.join(tmp, 'keep.jsonl'), 'what the user had\n');
    // --force: the user allows replacing it, but only by a finished evaluation.
    const failed = await ragen(
      'eval',
      '--checkpoint',
      'model-nan',
      '--preset',
      'bandit-tiny',
      '--backend',
      'wasm',
      '--trajectories',
      'keep.jsonl',
      '--force',
    );
    expect(failed.code).toBe(2);
    expect(fs.readFileSync(path.join(tmp, 'keep.jsonl'), 'utf8')).toBe('what the user had\n');
    expect(fs.readdirSync(tmp).filter((n) => n.startsWith('keep.jsonl.'))).toEqual([]);
  }, 120_000);
});

describe('resolveCheckpoint', () => {
  it('finds the run config of a run directory, of one of its checkpoints, and of a warm-start directory', () => {
    const runDir = path.join(tmp, 'run');
    const step = path.join(runDir, 'checkpoints', 'step-2');
    fs.mkdirSync(step, { recursive: true });
    for (const f of fs.readdirSync(path.join(tmp, 'model-a')))
      fs.copyFileSync(path.join(tmp, 'model-a', f), path.join(step, f));
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
