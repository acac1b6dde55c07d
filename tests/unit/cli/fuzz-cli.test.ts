// Fuzz of the command line: random flags and `--set` keys with random values, under random values of the environment
// variables ragen reads, fed to every subcommand that takes input, in-process through main(). Whatever the input: the exit code is 0 (it worked) or 2 (one line
// naming the problem), never a stack trace, and no file outside the output the command was given changes (the run,
// its checkpoints, the model and the input files are compared byte for byte after every command). Fixed seed and a
// bounded number of runs and time (tests/unit/fuzz/budget.ts); valid numbers are kept small so that a command that
// succeeds does a few seconds of work at most.
import fc from 'fast-check';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeConfig } from '../../../src/starpo/config';
import { fuzzParams } from '../fuzz/budget';
import { ragen, snapshot, trainTinyRun } from './cli-fixture';

let tmp: string;
let run: string;
let configFile: string;
/** Outputs go under here, a fresh path per command; everything else under tmp must never change. */
let outputs: string;
let counter = 0;

/** Numbers as a user might type them: small valid ones, bounds and one past them, huge, negative, not numbers. */
const number = fc.oneof(
  fc.integer({ min: -2, max: 3 }).map(String),
  fc.constantFrom(
    '0.5',
    '1e3',
    '',
    ' ',
    'x',
    'NaN',
    'Infinity',
    '-0',
    '0x10',
    '9007199254740991',
    '9007199254740992',
    '1e308',
    '2147483647',
    '2147483648',
    '100001',
    '1001',
    '1025',
  ),
);

/** Every leaf key of the config, plus keys inside env lists and keys that do not exist. */
const setKeys = () => [
  ...describeConfig()
    .filter((r) => r.type !== 'section')
    .map((r) => r.key.replace('[]', '.0')),
  'agent.trainEnvs.0.config.numBoxes',
  'agent.trainEnvs.0.config.dimRoom',
  'agent.valEnvs.1.config.x',
  'nope.key',
  '__proto__.x',
  'trainer',
];
const setValue = fc.oneof(
  number,
  fc.constantFrom('true', 'null', '[]', '{}', '[20,20]', "'a'", 'yes', 'Bandit', '[{tag: Bandit, nGroups: 1}]'),
  fc.string({ maxLength: 12 }),
);

type Flags = [string, fc.Arbitrary<string>][];

const EVAL_FLAGS: Flags = [
  ['--episodes', number],
  ['--seed-start', number],
  ['--k', number],
  ['--seed', number],
  ['--temperature', number],
  ['--batch-size', number],
  ['--env', fc.constantFrom('Bandit', 'BanditTest', 'SimpleSokoban', 'Nope', '')],
  ['--backend', fc.constantFrom('cpu', 'wasm', 'tpu')],
  ['--fail-on-regression', number],
  ['--preset', fc.constantFrom('bandit-tiny', 'nope')],
];
const EXPORT_FLAGS: Flags = [
  ['--step', number],
  ['--dtype', fc.constantFrom('f32', 'bf16', 'f16')],
  ['--gpus-per-node', number],
  ['--nodes', number],
];
const WARMSTART_FLAGS: Flags = [
  ['--steps', number],
  ['--check-episodes', number],
  ['--backend', fc.constantFrom('cpu', 'gpu')],
];
const TRAIN_FLAGS: Flags = [
  ['--steps', number],
  ['--seed', number],
  ['--backend', fc.constantFrom('cpu', 'tpu')],
  ['--workers', fc.constantFrom('1', '0', 'x')],
  ['--arm', fc.constantFrom('starpo', 'x')],
  ['--resume', fc.constant('')],
];

const INIT_MODEL_FLAGS: Flags = [
  ['--layers', number],
  ['--seed', number],
  ['--shape', fc.constantFrom('qwen2.5-0.5b', 'qwen2.5-3b', 'qwen2.5-7b', '')],
  ['--force', fc.constant('')],
];

/** The environment variables ragen reads, with values a user might set: good ones, bad ones, numbers. */
const envVar = fc.option(
  fc.tuple(
    fc.constantFrom('RAGEN_PROGRESS_SECONDS', 'RAGEN_WEBGPU_MATMUL', 'RAGEN_WEBGPU_ATTENTION'),
    fc.oneof(
      number,
      fc.constantFrom('tiled', 'tfjs', 'auto', 'grouped', 'per-head', 'garbage', 'zz', '-1', '1e309', '86401'),
    ),
  ),
  { nil: undefined },
);

/** Some of `flags`, each with a random value (flags given as '' take none). */
function someFlags(flags: Flags): fc.Arbitrary<string[]> {
  return fc
    .subarray(flags, { maxLength: Math.min(4, flags.length) })
    .chain((chosen) =>
      chosen.length === 0
        ? fc.constant([])
        : fc
            .tuple(
              ...chosen.map(([flag, value]) =>
                value.map((v) => (flag === '--resume' || flag === '--force' ? [flag] : [flag, v])),
              ),
            )
            .map((pairs) => pairs.flat()),
    );
}

function sets(): fc.Arbitrary<string[]> {
  return fc
    .array(fc.tuple(fc.constantFrom(...setKeys()), setValue), { maxLength: 2 })
    .map((pairs) => pairs.flatMap(([k, v]) => ['--set', `${k}=${v}`]));
}

/** One command line; `out` is where it may write. */
function commandLine(): fc.Arbitrary<(out: string) => string[]> {
  return fc.oneof(
    fc
      .tuple(someFlags(EVAL_FLAGS), sets(), fc.boolean())
      .map(([flags, s, force]) => (out: string) => [
        'eval',
        '--checkpoint',
        run,
        '--episodes',
        '2',
        '--quiet',
        '--backend',
        'cpu',
        ...flags,
        ...s,
        '--out',
        out,
        ...(force ? ['--force'] : []),
      ]),
    someFlags(EXPORT_FLAGS).map((flags) => (out: string) => [
      'export',
      '--run',
      run,
      '--to',
      'ragen',
      '--quiet',
      ...flags,
      out,
    ]),
    fc
      .tuple(fc.constantFrom('h.csv', 'h.json', 'bad.json', 'missing.csv'), fc.boolean())
      .map(([file, force]) => (out: string) => [
        'import-metrics',
        path.join(tmp, 'inputs', file),
        '--quiet',
        '--out',
        out,
        ...(force ? ['--force'] : []),
      ]),
    fc
      .tuple(fc.constantFrom('bandit-tiny', 'sokoban-qwen', 'nope'), someFlags(WARMSTART_FLAGS))
      .map(([preset, flags]) => (out: string) => [
        'warmstart',
        '--preset',
        preset,
        '--no-check',
        '--steps',
        '1',
        ...flags,
        '--out',
        out,
      ]),
    fc
      .tuple(fc.constantFrom('config', 'preset'), someFlags(TRAIN_FLAGS), sets())
      .map(([from, flags, s]) => (out: string) => [
        'train',
        ...(from === 'config' ? ['--config', configFile] : ['--preset', 'bandit-tiny']),
        '--steps',
        '1',
        '--workers',
        '1',
        ...flags,
        ...s,
        '--out',
        out,
      ]),
    // init-model into places it must refuse (a run, its checkpoint, a folder of inputs, a file, /proc): a model it
    // accepted would take seconds and 300 MB per draw, so its successes are tested in init-model-guards.test.ts.
    fc
      .tuple(someFlags(INIT_MODEL_FLAGS), fc.constantFrom('run', 'checkpoint', 'inputs', 'file', 'proc'))
      .map(([flags, where]) => () => [
        'init-model',
        '--shape',
        'qwen2.5-0.5b',
        '--layers',
        '1',
        '--quiet',
        ...flags,
        '--out',
        {
          run,
          checkpoint: path.join(run, 'checkpoints', 'step-2'),
          inputs: path.join(tmp, 'inputs'),
          file: path.join(tmp, 'inputs', 'h.csv'),
          proc: '/proc/ragen-fuzz/model',
        }[where],
      ]),
  );
}

beforeAll(async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ragen-fuzz-cli-'));
  ({ run, configFile } = await trainTinyRun(tmp));
  const inputs = path.join(tmp, 'inputs');
  fs.mkdirSync(inputs);
  fs.writeFileSync(path.join(inputs, 'h.csv'), '_step,actor/pg_loss,b\n1,0.5,NaN\n1,0.6,Infinity\n2,0.4,x\n');
  fs.writeFileSync(path.join(inputs, 'h.json'), '[{"_step":1,"a":NaN},{"_step":2,"a":-Infinity}]');
  fs.writeFileSync(path.join(inputs, 'bad.json'), `[{"_step":1,"a":${'['.repeat(5000)}}]`);
  outputs = path.join(tmp, 'outputs');
  fs.mkdirSync(outputs);
});

afterAll(() => {
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

describe('CLI fuzz', () => {
  it('random flags and --set keys: exit 0 or 2, one line and no stack trace on failure, nothing outside the output changed', async () => {
    const outside = (rel: string) => rel.startsWith(`outputs${path.sep}`);
    const before = snapshot(tmp, outside);
    await fc.assert(
      fc.asyncProperty(commandLine(), envVar, async (build, env) => {
        const out = path.join(outputs, `o${counter++}`);
        const argv = build(out);
        if (env) process.env[env[0]] = env[1];
        let r;
        try {
          r = await ragen(...argv);
        } finally {
          if (env) delete process.env[env[0]];
        }
        if (process.env.FUZZ_LOG)
          fs.appendFileSync(process.env.FUZZ_LOG, `${r.code} ${argv[0]} ${r.err.slice(0, 150)}\n`);
        const shown = `${env ? `${env[0]}=${env[1]} ` : ''}ragen ${argv.join(' ')}\n${r.err}`;
        expect([0, 2], shown).toContain(r.code);
        expect(r.err, shown).not.toMatch(/\n\s+at /);
        if (r.code === 2) {
          // One line naming the problem; a config with several bad keys lists each below it ("  - key: why").
          const [first, ...more] = r.err.split('\n');
          expect(first, shown).toMatch(/^ragen: /);
          for (const line of more) expect(line, shown).toMatch(/^ {2}- /);
          expect(r.err.length, shown).toBeLessThan(2_000);
        }
        expect(snapshot(tmp, outside), shown).toEqual(before);
        // Nothing but the chosen output appeared in the outputs folder (no temp sibling left behind).
        expect(
          fs.readdirSync(outputs).filter((n) => n !== path.basename(out) && !/^o\d+$/.test(n)),
          shown,
        ).toEqual([]);
      }),
      fuzzParams(60, 30_000),
    );
  }, 120_000);
});
