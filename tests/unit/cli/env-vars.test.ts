// Every environment variable `ragen` reads is checked before any subcommand does work, whichever backend it would
// run on: a bad value is one line naming the variable and what it accepts (exit 2), never a stack trace or a
// silently ignored setting; a good value passes through to the command. In-process through main().
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ENV_VARIABLES } from '../../../src/cli/envVars';
import { expectRefused, ragen } from './cli-fixture';

let tmp: string;
const NAMES = ['RAGEN_PROGRESS_SECONDS', 'RAGEN_WEBGPU_MATMUL', 'RAGEN_WEBGPU_ATTENTION', 'RAGEN_WASM_FMA'];
const saved = Object.fromEntries(NAMES.map((n) => [n, process.env[n]]));

beforeAll(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ragen-env-vars-'));
});

afterEach(() => {
  for (const name of NAMES) {
    if (saved[name] === undefined) delete process.env[name];
    else process.env[name] = saved[name];
  }
});

afterAll(() => {
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

/** Commands that would each do real work (and write --out) if they got past the check. */
const commands = () => [
  ['train', '--preset', 'bandit-tiny', '--steps', '1', '--backend', 'wasm', '--out', path.join(tmp, 'run')],
  ['train', '--preset', 'bandit-tiny', '--steps', '1', '--backend', 'cpu', '--out', path.join(tmp, 'run')],
  ['eval', '--checkpoint', path.join(tmp, 'none'), '--backend', 'wasm'],
  ['bench', '--only', 'envs'],
  ['init-model', '--shape', 'qwen2.5-0.5b', '--layers', '1', '--out', path.join(tmp, 'model')],
];

describe('environment variables', () => {
  it('a bad value is one line naming the variable, on every backend and command, before any work', async () => {
    for (const [name, value, accepts] of [
      ['RAGEN_PROGRESS_SECONDS', 'abc', /expected a number of seconds from 0 to 86400/],
      ['RAGEN_PROGRESS_SECONDS', '-1', /expected a number of seconds from 0 to 86400/],
      ['RAGEN_PROGRESS_SECONDS', '1e309', /expected a number of seconds from 0 to 86400/],
      ['RAGEN_PROGRESS_SECONDS', '86401', /expected a number of seconds from 0 to 86400/],
      ['RAGEN_WEBGPU_MATMUL', 'garbage', /expected one of tiled, tfjs/],
      ['RAGEN_WEBGPU_ATTENTION', 'zz', /expected one of auto, grouped, per-head/],
      ['RAGEN_WASM_FMA', 'yes', /expected one of 0, 1/],
    ] as const) {
      process.env[name] = value;
      for (const argv of commands()) {
        const r = await ragen(...argv);
        expectRefused(r, new RegExp(`^ragen: ${name}=${value.replace(/[.+-]/g, '\\$&')}: ${accepts.source}`));
      }
      delete process.env[name];
    }
    expect(fs.readdirSync(tmp)).toEqual([]);
  });

  it('good values pass the check (the command goes on to its own flags)', async () => {
    process.env.RAGEN_PROGRESS_SECONDS = '0.5';
    process.env.RAGEN_WEBGPU_MATMUL = 'tfjs';
    process.env.RAGEN_WEBGPU_ATTENTION = 'per-head';
    process.env.RAGEN_WASM_FMA = '0';
    expectRefused(
      await ragen('init-model', '--shape', 'qwen2.5-0.5b', '--layers', '0', '--out', path.join(tmp, 'm')),
      /^ragen: --layers must be/,
    );
    process.env.RAGEN_PROGRESS_SECONDS = ''; // empty is unset
    expectRefused(
      await ragen('init-model', '--shape', 'qwen2.5-0.5b', '--layers', '0', '--out', path.join(tmp, 'm')),
      /^ragen: --layers must be/,
    );
  });

  it('--help lists every variable', async () => {
    const r = await ragen('--help');
    for (const [name] of ENV_VARIABLES) expect(r.out).toContain(name);
  });
});
