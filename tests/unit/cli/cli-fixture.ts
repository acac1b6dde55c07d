// Shared by the CLI tests that need a real run: the `ragen` command run in-process through main() with its output
// captured, and a tiny trained run (the tiny Bandit policy of the trainer tests, 2 steps, a checkpoint after each).
import * as fs from 'node:fs';
import * as path from 'node:path';
import { expect, vi } from 'vitest';
import { main } from '../../../src/cli/main';
import { saveCheckpointDir } from '../../../src/model/checkpointDir';
import { tinyBanditConfig, tinyPolicy } from '../starpo/trainer-fixture';

export interface CliResult {
  code: number;
  /** console.log and stdout. */
  out: string;
  /** console.error (where main prints its one-line errors and any stack trace). */
  err: string;
}

/** `ragen ...args` in this process. */
export async function ragen(...args: string[]): Promise<CliResult> {
  const out: string[] = [];
  const err: string[] = [];
  const log = vi.spyOn(console, 'log').mockImplementation((...a: unknown[]) => void out.push(a.join(' ')));
  const error = vi
    .spyOn(console, 'error')
    .mockImplementation(
      (...a: unknown[]) =>
        void err.push(a.map((x) => (x instanceof Error ? (x.stack ?? String(x)) : String(x))).join(' ')),
    );
  const stdout = vi
    .spyOn(process.stdout, 'write')
    .mockImplementation((s: string | Uint8Array) => (out.push(String(s)), true));
  const stderr = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
  try {
    const code = await main(['node', 'ragen', ...args]);
    return { code, out: out.join('\n'), err: err.join('\n') };
  } finally {
    for (const spy of [log, error, stdout, stderr]) spy.mockRestore();
  }
}

/** Exit 2 with exactly one `ragen: ...` line matching `pattern`, and no stack trace. */
export function expectRefused(r: CliResult, pattern: RegExp): void {
  expect(r.code, r.err).toBe(2);
  expect(r.err.split('\n'), r.err).toHaveLength(1);
  expect(r.err).toMatch(/^ragen: /);
  expect(r.err).toMatch(pattern);
}

/** Every file under `dir` (but `skip`) with its bytes, to prove a command changed nothing there. */
export function snapshot(dir: string, skip: (rel: string) => boolean = () => false): Record<string, string> {
  const files: Record<string, string> = {};
  for (const entry of fs.readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const rel = path.relative(dir, path.join(entry.parentPath, entry.name));
    if (!skip(rel)) files[rel] = fs.readFileSync(path.join(entry.parentPath, entry.name)).toString('base64');
  }
  return files;
}

/**
 * Trains the tiny run into `root/run` (its model in root/tiny-model, its config in root/tiny.json) and returns the
 * run directory.
 */
export async function trainTinyRun(root: string): Promise<{ run: string; configFile: string }> {
  const { model, tokenizer } = tinyPolicy();
  await saveCheckpointDir(path.join(root, 'tiny-model'), model, tokenizer);
  model.dispose();
  const config = tinyBanditConfig({ trainer: { totalSteps: 2, saveFreq: 1, testFreq: 2 } });
  const configFile = path.join(root, 'tiny.json');
  fs.writeFileSync(
    configFile,
    JSON.stringify({ ...config, model: { ...config.model, path: path.join(root, 'tiny-model') } }),
  );
  const run = path.join(root, 'run');
  const r = await ragen('train', '--config', configFile, '--out', run);
  expect(r.code, r.err).toBe(0);
  return { run, configFile };
}
