// `ragen train` refuses what would lose or poison a run, before any work, with one line and exit 2: a resume that
// changes the config or shrinks the run, a run directory without a complete checkpoint or with broken metrics, a
// damaged newest checkpoint, an --out another live run holds or that cannot be written, a prompt longer than the
// model's positions. Run in-process through main() (spawning the CLI costs seconds per case); the race of two
// processes for one --out is the one test that spawns.
import { execFile, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import * as tf from '@tensorflow/tfjs';
import { main } from '../../../src/cli/main';
import { saveCheckpointDir } from '../../../src/model/checkpointDir';
import { parseSafetensors, serializeSafetensors } from '../../../src/model/safetensors';
import { LOCK_FILE } from '../../../src/node/runLock';
import { tinyBanditConfig, tinyPolicy } from '../starpo/trainer-fixture';

let tmp: string;
let configFile: string;
/** A finished 4-step run (checkpoints at steps 2 and 4); each test works on its own copy. */
let finished: string;

async function ragen(...args: string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const log = vi.spyOn(console, 'log').mockImplementation((...a: unknown[]) => void out.push(a.join(' ')));
  const error = vi
    .spyOn(console, 'error')
    .mockImplementation((...a: unknown[]) => void err.push(a.map(String).join(' ')));
  const stderr = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
  try {
    const code = await main(['node', 'ragen', 'train', ...args]);
    return { code, out: out.join('\n'), err: err.join('\n') };
  } finally {
    log.mockRestore();
    error.mockRestore();
    stderr.mockRestore();
  }
}

/** Exit 2 with exactly one `ragen: ...` line matching `pattern`, and no stack trace. */
function expectRefused(r: { code: number; err: string }, pattern: RegExp): void {
  expect(r.code, r.err).toBe(2);
  expect(r.err.split('\n')).toHaveLength(1);
  expect(r.err).toMatch(/^ragen: /);
  expect(r.err).toMatch(pattern);
  expect(r.err).not.toMatch(/\n\s+at /);
}

/** Every file of a directory with its bytes, to prove a refused command changed nothing. */
function snapshot(dir: string): Record<string, string> {
  const files: Record<string, string> = {};
  for (const entry of fs.readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const file = path.join(entry.parentPath, entry.name);
    files[path.relative(dir, file)] = fs.readFileSync(file).toString('base64');
  }
  return files;
}

/** Rewrites a safetensors file with one value of its first tensor set to `value` (NaN by default). */
function poison(file: string, value = NaN): void {
  const { tensors, metadata } = parseSafetensors(new Uint8Array(fs.readFileSync(file)));
  const first = Object.keys(tensors).sort()[0];
  tensors[first].data[0] = value;
  fs.writeFileSync(file, serializeSafetensors(tensors, metadata));
}

function copyRun(name: string): string {
  const dir = path.join(tmp, name);
  fs.cpSync(finished, dir, { recursive: true });
  return dir;
}

beforeAll(async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ragen-guards-'));
  const { model, tokenizer } = tinyPolicy();
  await saveCheckpointDir(path.join(tmp, 'tiny-model'), model, tokenizer);
  model.dispose();
  const config = tinyBanditConfig({ trainer: { totalSteps: 4, saveFreq: 2, testFreq: 2 } });
  configFile = path.join(tmp, 'tiny.json');
  fs.writeFileSync(
    configFile,
    JSON.stringify({ ...config, model: { ...config.model, path: path.join(tmp, 'tiny-model') } }),
  );
  finished = path.join(tmp, 'finished');
  const r = await ragen('--config', configFile, '--out', finished);
  expect(r.code, r.err).toBe(0);
  expect(fs.existsSync(path.join(finished, LOCK_FILE))).toBe(false); // released at the end
});

afterAll(() => {
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

describe('--resume continues the run as it was started, or changes nothing', () => {
  it('refuses --set changes without --preset, as it does with it, and a --steps below what the run holds', async () => {
    const dir = copyRun('resume-set');
    const before = snapshot(dir);
    expectRefused(
      await ragen('--resume', '--out', dir, '--set', 'actor.lr=0.5'),
      /the config differs from the one .* was started with, at actor\.lr/,
    );
    expectRefused(
      await ragen('--resume', '--out', dir, '--steps', '2'),
      /--steps 2 is fewer than the 4 steps .* already holds/,
    );
    expect(snapshot(dir)).toEqual(before); // config.json still describes the steps it ran
  });

  it('refuses a run directory with no complete checkpoint instead of starting over (metrics and weights kept)', async () => {
    const dir = copyRun('resume-nockpt');
    for (const step of [2, 4]) fs.rmSync(path.join(dir, `checkpoints/step-${step}/trainer_state.json`));
    const before = snapshot(dir);
    expectRefused(
      await ragen('--resume', '--out', dir, '--steps', '6'),
      /holds no complete checkpoint .* nothing was changed/,
    );
    expect(snapshot(dir)).toEqual(before);
  });

  it('refuses a deleted or torn metrics.jsonl, and a trainer_state.json whose step disagrees with its folder', async () => {
    const gone = copyRun('resume-nometrics');
    fs.rmSync(path.join(gone, 'metrics.jsonl'));
    expectRefused(
      await ragen('--resume', '--out', gone, '--steps', '6'),
      /metrics\.jsonl is missing, so steps 1-4 would have no metrics/,
    );

    const torn = copyRun('resume-torn');
    const lines = fs.readFileSync(path.join(torn, 'metrics.jsonl'), 'utf8').split('\n');
    fs.writeFileSync(path.join(torn, 'metrics.jsonl'), lines.slice(0, 3).join('\n') + '\n' + lines[3].slice(0, 30));
    const before = snapshot(torn);
    expectRefused(
      await ragen('--resume', '--out', torn, '--steps', '6'),
      /metrics\.jsonl has no row for step 3, 4 although the checkpoint is at step 4/,
    );
    expect(snapshot(torn)).toEqual(before);

    const moved = copyRun('resume-badstate');
    const state = path.join(moved, 'checkpoints/step-4/trainer_state.json');
    fs.writeFileSync(state, fs.readFileSync(state, 'utf8').replace('"step": 4', '"step": 3'));
    expectRefused(
      await ragen('--resume', '--out', moved, '--steps', '6'),
      /step-4\/trainer_state\.json records step 3, not the step 4 its folder names/,
    );
  });

  it('refuses a newer step folder that is not a complete checkpoint (resuming would write over it)', async () => {
    const dir = copyRun('resume-partial');
    fs.mkdirSync(path.join(dir, 'checkpoints/step-6'));
    fs.copyFileSync(
      path.join(dir, 'checkpoints/step-4/model.safetensors'),
      path.join(dir, 'checkpoints/step-6/model.safetensors'),
    );
    expectRefused(
      await ragen('--resume', '--out', dir, '--steps', '8'),
      /step-6 is not a complete checkpoint .* newer than .*step-4/,
    );
  });

  it('names a damaged newest checkpoint and the older one to resume from, changing nothing', async () => {
    const cases: [string, (ckpt: string) => void, RegExp][] = [
      [
        'truncated',
        (c) => fs.truncateSync(path.join(c, 'model.safetensors'), 100),
        /model\.safetensors: safetensors: truncated file/,
      ],
      [
        'bad-header',
        (c) =>
          fs.writeFileSync(
            path.join(c, 'optimizer.safetensors'),
            Buffer.from([8, 0, 0, 0, 0, 0, 0, 0, 123, 34, 120, 34, 58, 49, 50, 125]),
          ),
        /optimizer\.safetensors/,
      ],
      ['no-optimizer', (c) => fs.rmSync(path.join(c, 'optimizer.safetensors')), /optimizer\.safetensors is missing/],
      ['no-critic', (c) => fs.rmSync(path.join(c, 'critic'), { recursive: true }), /no critic\/model\.safetensors/],
      ['no-tokenizer', (c) => fs.rmSync(path.join(c, 'tokenizer.json')), /tokenizer\.json is missing/],
      // Non-finite weights (a diverged run, flipped bits) are flagged, not trained on.
      [
        'nan-actor',
        (c) => poison(path.join(c, 'model.safetensors')),
        /tensor '.*' in model\.safetensors has 1 non-finite value/,
      ],
      [
        'nan-critic',
        (c) => poison(path.join(c, 'critic/model.safetensors')),
        /in model\.safetensors has 1 non-finite value.*\(the critic, under critic\/\)/,
      ],
      [
        'inf-moments',
        (c) => poison(path.join(c, 'optimizer.safetensors'), Infinity),
        /optimizer\.safetensors has 1 non-finite value/,
      ],
    ];
    for (const [name, damage, why] of cases) {
      const dir = copyRun(`damaged-${name}`);
      damage(path.join(dir, 'checkpoints/step-4'));
      const before = snapshot(dir);
      const r = await ragen('--resume', '--out', dir, '--steps', '6');
      expectRefused(r, /--resume: the checkpoint .*step-4 cannot be loaded: /);
      expect(r.err, name).toMatch(why);
      expect(r.err).toMatch(/Nothing was changed; the newest checkpoint before it is .*step-2: move step-4 out of/);
      expect(snapshot(dir), name).toEqual(before);
      expect(fs.existsSync(path.join(dir, LOCK_FILE))).toBe(false);
    }
  });

  it('tidies what a killed checkpoint write left, restoring a checkpoint that was moved aside', async () => {
    const dir = copyRun('resume-stray');
    const root = path.join(dir, 'checkpoints');
    fs.mkdirSync(path.join(root, '.step-6.tmp-999-1')); // a write killed before its rename
    fs.renameSync(path.join(root, 'step-4'), path.join(root, '.step-4.tmp-999-2.old')); // killed while replacing step-4
    const r = await ragen('--resume', '--out', dir, '--steps', '5');
    expect(r.code, r.err).toBe(0);
    expect(r.out).toMatch(/restored .*step-4 from \.step-4\.tmp-999-2\.old/);
    expect(r.out).toMatch(/resuming .* from checkpoint step 4/);
    expect(fs.readdirSync(root).sort()).toEqual(['step-2', 'step-4', 'step-5']); // no temp folder left
  });
});

describe('one writer per run directory', () => {
  it('refuses a run or a resume into a directory a live process holds, and takes over a stale lock', async () => {
    const dir = copyRun('locked');
    fs.writeFileSync(
      path.join(dir, LOCK_FILE),
      JSON.stringify({ pid: process.pid, host: os.hostname(), started: 'now' }),
    );
    expectRefused(
      await ragen('--resume', '--out', dir, '--steps', '5'),
      /is in use by another ragen process \(pid \d+ on .*\); wait for it to finish, or delete .*\.ragen\.lock/,
    );
    const fresh = path.join(tmp, 'locked-fresh');
    fs.mkdirSync(fresh);
    fs.writeFileSync(
      path.join(fresh, LOCK_FILE),
      JSON.stringify({ pid: process.pid, host: os.hostname(), started: 'now' }),
    );
    expectRefused(await ragen('--config', configFile, '--out', fresh), /is in use by another ragen process/);

    // A lock whose process is gone (killed with -9) does not block the next run.
    const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
    fs.writeFileSync(
      path.join(dir, LOCK_FILE),
      JSON.stringify({ pid: Number(dead.stdout), host: os.hostname(), started: 'then' }),
    );
    const resumed = await ragen('--resume', '--out', dir, '--steps', '5');
    expect(resumed.code, resumed.err).toBe(0);
    expect(fs.existsSync(path.join(dir, LOCK_FILE))).toBe(false);
  });

  it('of two runs started at the same instant into one --out, exactly one trains', async () => {
    const out = path.join(tmp, 'race');
    const bin = path.resolve('bin/ragen.js');
    const run = promisify(execFile);
    const start = () =>
      run(process.execPath, [bin, 'train', '--config', configFile, '--out', out, '--steps', '2'], { timeout: 300_000 })
        .then(() => ({ code: 0, stderr: '' }))
        .catch((e: { code?: number; stderr?: string }) => ({ code: e.code ?? -1, stderr: e.stderr ?? '' }));
    const results = await Promise.all([start(), start()]);
    expect(results.map((r) => r.code).sort()).toEqual([0, 2]);
    expect(results.find((r) => r.code === 2)!.stderr).toMatch(/in use by another ragen process|already holds a run/);
    const steps = fs
      .readFileSync(path.join(out, 'metrics.jsonl'), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l).step);
    expect(steps).toEqual([0, 1, 2]); // one run's rows, not two interleaved
  });
});

describe('bad --out targets and inputs fail before any work', () => {
  it('an --out that is a file, lies under a file, or cannot be created', async () => {
    const file = path.join(tmp, 'a-file');
    fs.writeFileSync(file, 'keep me');
    expectRefused(await ragen('--config', configFile, '--out', file), /--out .*a-file exists and is not a directory/);
    expectRefused(
      await ragen('--config', configFile, '--out', path.join(file, 'run')),
      /--out .*a-file\/run: .*a-file is a file, not a directory/,
    );
    expectRefused(
      await ragen('--config', configFile, '--out', '/proc/ragen-run'),
      /--out \/proc\/ragen-run: nothing can be created in \/proc/,
    );
    expect(fs.readFileSync(file, 'utf8')).toBe('keep me');
  });

  it('names a --config that is a directory, and a model directory whose model.safetensors is not a file', async () => {
    expectRefused(await ragen('--config', tmp, '--out', path.join(tmp, 'x')), /--config .*: not a file/);
    const deep = path.join(tmp, 'deep.json');
    fs.writeFileSync(deep, '{"actor": {"x": ' + '{"a":'.repeat(5000) + '1' + '}'.repeat(5000) + '}}');
    expectRefused(
      await ragen('--config', deep, '--out', path.join(tmp, 'x')),
      /invalid run config \(.*deep\.json\): nested deeper than 32 levels/,
    );
    const badYaml = path.join(tmp, 'bad.yaml');
    fs.writeFileSync(badYaml, 'actor:\n  lr: [1, 2\n');
    expectRefused(
      await ragen('--config', badYaml, '--out', path.join(tmp, 'x')),
      /could not read the run config .*bad\.yaml as YAML: .*line \d+, column \d+$/,
    );
    const model = path.join(tmp, 'odd-model');
    fs.cpSync(path.join(tmp, 'tiny-model'), model, { recursive: true });
    fs.rmSync(path.join(model, 'model.safetensors'));
    fs.mkdirSync(path.join(model, 'model.safetensors'));
    expectRefused(
      await ragen('--config', configFile, '--set', `model=${model}`, '--out', path.join(tmp, 'y')),
      /odd-model\/model\.safetensors is not a file/,
    );
  });

  it('refuses a run whose prompt plus responses cannot fit the model positions, naming the env block', async () => {
    // The tiny model has 512 positions; Bandit's prompt is over a hundred tokens.
    const r = await ragen('--config', configFile, '--set', 'rollout.maxNewTokens=480', '--out', path.join(tmp, 'long'));
    expectRefused(
      r,
      /agent\.trainEnvs\[0\] \(Bandit\): the first prompt is \d+ tokens, plus up to 480 new tokens .* more than the model's 512 positions/,
    );
    expect(fs.existsSync(path.join(tmp, 'long'))).toBe(false);
  });
});

describe('the backend a run asks for', () => {
  it('is started again when another command in this process moved tfjs elsewhere since the last train', async () => {
    // beforeAll's run started wasm (the tiny config's trainer.backend). Tools and tests call main() many times in one
    // process; an eval or bench in between may leave tfjs on cpu or webgpu. The next run must not train there.
    await tf.setBackend('cpu');
    const r = await ragen(
      '--config',
      configFile,
      '--steps',
      '1',
      '--set',
      'trainer.saveFreq=1',
      '--out',
      path.join(tmp, 'again'),
    );
    expect(r.code, r.err).toBe(0);
    expect(r.out).toMatch(/^backend: wasm \(asked for with --backend wasm\)$/m);
    expect(tf.getBackend()).toBe('wasm');
  });
});
