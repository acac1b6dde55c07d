// Issue 31, case by case: nothing a user already has is overwritten (a run's own files never, anything else only
// with --force), every input is bounded before any work, and every failure a user can cause is one line with exit 2.
// Each case ran against the CLI before the fix and lost data, hung, printed a stack trace or was silently wrong.
// Run in-process through main() on a real tiny run trained here (2 steps, a checkpoint at each).
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOCK_FILE } from '../../../src/node/runLock';
import { expectRefused, ragen, snapshot, trainTinyRun } from './cli-fixture';

let tmp: string;
/** A finished 2-step run (checkpoints at steps 1 and 2); tests that change it work on their own copy. */
let run: string;

function copyRun(name: string): string {
  const dir = path.join(tmp, name);
  fs.cpSync(run, dir, { recursive: true });
  return dir;
}

const EVAL = ['--episodes', '2', '--backend', 'cpu', '--quiet'];

beforeAll(async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ragen-write-guards-'));
  ({ run } = await trainTinyRun(tmp));
});

afterAll(() => {
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

describe("a run's own files are never written by another command, --force or not", () => {
  it('ragen eval refuses --out / --trajectories over config.json, metrics.jsonl and anything in checkpoints/', async () => {
    const before = snapshot(run);
    const weights = path.join(run, 'checkpoints', 'step-2', 'model.safetensors');
    for (const [flag, target, why] of [
      ['--out', path.join(run, 'config.json'), /is the config\.json of the run/],
      ['--trajectories', path.join(run, 'metrics.jsonl'), /is the metrics\.jsonl of the run/],
      ['--out', path.join(run, 'rollouts.jsonl'), /is the rollouts\.jsonl of the run/],
      ['--out', weights, /lies inside the checkpoints of the run/],
      ['--out', path.join(run, 'checkpoints', 'card.json'), /lies inside the checkpoints of the run/],
    ] as const) {
      expectRefused(await ragen('eval', '--checkpoint', run, ...EVAL, flag, target), why);
      expectRefused(await ragen('eval', '--checkpoint', run, ...EVAL, flag, target, '--force'), why);
    }
    expect(snapshot(run)).toEqual(before);
  });

  it('ragen warmstart refuses a checkpoint of a run as --out, before the fine-tuning', async () => {
    const before = snapshot(run);
    const r = await ragen(
      'warmstart',
      '--preset',
      'bandit-tiny',
      '--steps',
      '2',
      '--no-check',
      '--force',
      '--out',
      path.join(run, 'checkpoints', 'step-2'),
    );
    expectRefused(r, /lies inside the checkpoints of the run/);
    expect(r.out).not.toMatch(/SFT/);
    expect(snapshot(run)).toEqual(before);
  });

  it('ragen import-metrics and ragen export refuse a run directory or its checkpoints as their output', async () => {
    const csv = path.join(tmp, 'history.csv');
    fs.writeFileSync(csv, '_step,a\n1,1\n');
    const before = snapshot(run);
    expectRefused(
      await ragen('import-metrics', csv, '--out', run, '--force'),
      /already holds a run: only ragen train writes there/,
    );
    expectRefused(
      await ragen('export', '--run', run, '--to', 'ragen', path.join(run, 'checkpoints', 'exported')),
      /lies inside the checkpoints of the run/,
    );
    expect(snapshot(run)).toEqual(before);
  });
});

describe('an existing file is replaced only with --force, and never the --baseline', () => {
  it('ragen eval --out: refused when the file exists, replaced atomically with --force; --out = --baseline always refused', async () => {
    const card = path.join(tmp, 'card.json');
    fs.writeFileSync(card, 'what the user had\n');
    expectRefused(
      await ragen('eval', '--checkpoint', run, ...EVAL, '--out', card),
      /card\.json already exists: pass --force/,
    );
    expect(fs.readFileSync(card, 'utf8')).toBe('what the user had\n');
    const forced = await ragen('eval', '--checkpoint', run, ...EVAL, '--out', card, '--force');
    expect(forced.code, forced.err).toBe(0);
    expect(JSON.parse(fs.readFileSync(card, 'utf8')).format).toBe('ragen-ts-scorecard/1');
    const baseline = fs.readFileSync(card, 'utf8');
    for (const force of [[], ['--force']]) {
      expectRefused(
        await ragen('eval', '--checkpoint', run, ...EVAL, '--baseline', card, '--out', card, ...force),
        /is the --baseline/,
      );
    }
    expect(fs.readFileSync(card, 'utf8')).toBe(baseline);
    expect(fs.readdirSync(tmp).filter((n) => n.startsWith('card.json.'))).toEqual([]); // no temp sibling left
  });

  it('ragen eval --trajectories: a stale temp file of a dead process is removed, a folder in its way is no obstacle', async () => {
    const file = path.join(tmp, 'episodes.jsonl');
    fs.writeFileSync(`${file}.tmp-999999-1`, 'half written by a killed eval\n');
    fs.mkdirSync(`${file}.partial`); // the temp name before issue 31 (a folder there made eval crash with EISDIR)
    const r = await ragen('eval', '--checkpoint', run, ...EVAL, '--trajectories', file);
    expect(r.code, r.err).toBe(0);
    expect(fs.readFileSync(file, 'utf8').trimEnd().split('\n').length).toBeGreaterThan(0);
    expect(fs.existsSync(`${file}.tmp-999999-1`)).toBe(false);
  });

  it('ragen import-metrics: an existing file or non-empty folder as --out is refused without --force', async () => {
    const csv = path.join(tmp, 'h.csv');
    fs.writeFileSync(csv, '_step,a\n1,1\n');
    const notes = path.join(tmp, 'notes');
    fs.mkdirSync(notes);
    fs.writeFileSync(path.join(notes, 'todo.txt'), 'keep me');
    expectRefused(await ragen('import-metrics', csv, '--out', csv), /h\.csv exists and is not a directory/);
    expectRefused(
      await ragen('import-metrics', csv, '--out', notes),
      /notes already exists and is not empty: pass --force/,
    );
    expect(fs.readFileSync(path.join(notes, 'todo.txt'), 'utf8')).toBe('keep me');
    expect(fs.readFileSync(csv, 'utf8')).toBe('_step,a\n1,1\n');
  });
});

describe('interrupted saves leave nothing that needs a person', () => {
  it('ragen warmstart removes the temp folders a killed save left beside its --out, and writes the checkpoint', async () => {
    const out = path.join(tmp, 'warm');
    const dead = 2 ** 22 + 1; // above the kernel's pid limit: no such process
    fs.mkdirSync(`${out}.tmp-${dead}-1700000000000`);
    fs.writeFileSync(path.join(`${out}.tmp-${dead}-1700000000000`, 'model.safetensors'), 'half written');
    const r = await ragen(
      'warmstart',
      '--preset',
      'bandit-tiny',
      '--steps',
      '1',
      '--no-check',
      '--backend',
      'cpu',
      '--out',
      out,
    );
    expect(r.code, r.err).toBe(0);
    expect(r.out).toMatch(/removed .*warm\.tmp-4194305-1700000000000 \(left by an interrupted write\)/);
    expect(fs.readdirSync(tmp).filter((n) => n.startsWith('warm'))).toEqual(['warm']);
    expect(fs.existsSync(path.join(out, 'model.safetensors'))).toBe(true);
    // A second build into it needs --force.
    expectRefused(
      await ragen(
        'warmstart',
        '--preset',
        'bandit-tiny',
        '--steps',
        '1',
        '--no-check',
        '--backend',
        'cpu',
        '--out',
        out,
      ),
      /already exists and is not empty: pass --force/,
    );
  });
});

describe('outputs that cannot be written are refused at once (they used to spin for ever)', () => {
  it('import-metrics --out /proc/x and export OUT=/proc/x', async () => {
    const csv = path.join(tmp, 'p.csv');
    fs.writeFileSync(csv, '_step,a\n1,1\n');
    expectRefused(
      await ragen('import-metrics', csv, '--out', '/proc/ragen-x'),
      /--out \/proc\/ragen-x: nothing can be created in \/proc/,
    );
    expectRefused(
      await ragen('export', '--run', run, '--to', 'ragen', '/proc/ragen-x'),
      /\/proc\/ragen-x: nothing can be created in \/proc/,
    );
  });
});

describe('every number is bounded before any work', () => {
  it('eval: --k, --seed-start (the last seed too), --episodes; export --gpus-per-node; --set agent.maxTurn', async () => {
    expectRefused(
      await ragen('eval', '--checkpoint', run, '--k', '9007199254740991'),
      /--k must be an integer from 1 to 1000/,
    );
    expectRefused(
      await ragen('eval', '--checkpoint', run, '--episodes', '40', '--seed-start', '9007199254740960'),
      /--seed-start must be an integer from 0 to 2147483647/,
    );
    expectRefused(
      await ragen('eval', '--checkpoint', run, '--episodes', '40', '--seed-start', '2147483640'),
      /the last seed .* must be at most 2147483647/,
    );
    expectRefused(
      await ragen('eval', '--checkpoint', run, '--episodes', '100000', '--k', '1000'),
      /episodes x k must be at most 1000000/,
    );
    expectRefused(
      await ragen('export', '--run', run, '--to', 'ragen', '--gpus-per-node', '9007199254740991', path.join(tmp, 'x')),
      /--gpus-per-node must be an integer from 1 to 1024/,
    );
    expectRefused(await ragen('eval', '--checkpoint', run, '--set', 'agent.maxTurn=100000'), /agent\.maxTurn.*100/);
  });

  it('eval refuses --set agent.valEnvs.*: its suites come from agent.trainEnvs, so the override would be ignored', async () => {
    expectRefused(
      await ragen('eval', '--checkpoint', run, ...EVAL, '--set', 'agent.valEnvs.0.config.hiArmHiScore=9'),
      /plays suites built from agent\.trainEnvs/,
    );
  });

  it('an env-config error shows a long --set value clipped, not whole', async () => {
    const map = JSON.stringify(Array.from({ length: 100 }, () => 'F'.repeat(100)));
    const r = await ragen('eval', '--checkpoint', run, ...EVAL, '--set', `agent.trainEnvs.0.config.loArmName=${map}`);
    expectRefused(r, /loArmName/);
    expect(r.err.length).toBeLessThan(600);
  });
});

describe('import-metrics says what it changed', () => {
  it('notes duplicate steps and non-finite columns, keeps an all-NaN column, and refuses deeply nested JSON in one line', async () => {
    const file = path.join(tmp, 'odd.json');
    fs.writeFileSync(
      file,
      '[{"_step":1,"a":1,"b":NaN,"c":1},{"_step":1,"a":2,"b":NaN,"c":Infinity},{"_step":2,"a":3,"b":NaN,"c":2}]',
    );
    const out = path.join(tmp, 'odd-run');
    const r = await ragen('import-metrics', file, '--out', out);
    expect(r.code, r.err).toBe(0);
    const rows = fs
      .readFileSync(path.join(out, 'metrics.jsonl'), 'utf8')
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(rows).toEqual([
      { step: 1, a: 2, b: null, c: null },
      { step: 2, a: 3, b: null, c: 2 },
    ]);
    const report = JSON.parse(fs.readFileSync(path.join(out, 'import.json'), 'utf8'));
    expect(report.changed._step).toMatch(
      /1 step\(s\) logged twice with different values \(1; e\.g\. a, c\): the later row was kept/,
    );
    expect(report.changed.b).toMatch(/no finite value/);
    expect(report.changed.c).toMatch(/1 infinite value/);

    const deep = path.join(tmp, 'deep.json');
    fs.writeFileSync(deep, `[{"_step":1,"a":${'['.repeat(100_000)}${']'.repeat(100_000)}}]`);
    expectRefused(
      await ragen('import-metrics', deep, '--out', path.join(tmp, 'deep-run')),
      /nested deeper than 16 levels/,
    );
  });
});

describe('a checkpoint is checked before any work', () => {
  it('a config.json with fewer layers than the weights hold is refused, naming the mismatch', async () => {
    // The shipped Bandit warm start has 2 layers; its config.json is edited to say 1 (it used to load as a 1-layer model).
    const dir = path.join(tmp, 'layers');
    fs.cpSync(path.resolve('public/warmstart/bandit-tiny'), dir, { recursive: true });
    const configFile = path.join(dir, 'config.json');
    const hf = JSON.parse(fs.readFileSync(configFile, 'utf8'));
    expect(hf.num_hidden_layers).toBe(2);
    fs.writeFileSync(configFile, JSON.stringify({ ...hf, num_hidden_layers: 1 }));
    expectRefused(
      await ragen('eval', '--checkpoint', dir, ...EVAL),
      /config\.json says num_hidden_layers 1 but model\.safetensors also holds layer 1/,
    );
  });

  it('a tokenizer without <|im_end|> is refused before the backend starts (it used to crash mid-eval)', async () => {
    const dir = copyRun('no-im-end');
    const tokenizerFile = path.join(dir, 'checkpoints', 'step-2', 'tokenizer.json');
    const tokenizer = JSON.parse(fs.readFileSync(tokenizerFile, 'utf8'));
    tokenizer.added_tokens = tokenizer.added_tokens.filter((t: { content: string }) => t.content !== '<|im_end|>');
    delete tokenizer.model.vocab['<|im_end|>'];
    fs.writeFileSync(tokenizerFile, JSON.stringify(tokenizer));
    const r = await ragen('eval', '--checkpoint', dir, ...EVAL);
    expectRefused(r, /the tokenizer has no <\|im_end\|> token/);
  });
});

describe('ragen train --resume into a live run', () => {
  it('names the process that holds it, even before the run has a checkpoint', async () => {
    const dir = path.join(tmp, 'starting');
    fs.mkdirSync(dir);
    fs.copyFileSync(path.join(run, 'config.json'), path.join(dir, 'config.json'));
    // This test's own process stands in for a live `ragen train` that has not written its first checkpoint yet.
    fs.writeFileSync(
      path.join(dir, LOCK_FILE),
      JSON.stringify({ pid: process.pid, host: os.hostname(), started: 'now' }),
    );
    expectRefused(
      await ragen('train', '--resume', '--out', dir),
      new RegExp(`in use by another ragen process \\(pid ${process.pid} `),
    );
  });
});
