// Runs the real `ragen` command (bin/ragen.js) as a child process in `cwd`, for tests of the CLI end to end:
// exit code, stdout and stderr, whether it succeeds or fails.
import { execFile } from 'node:child_process';
import * as path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const BIN = path.resolve(import.meta.dirname, '../../bin/ragen.js');

export interface RagenResult {
  code: number;
  stdout: string;
  stderr: string;
}

export async function ragenProcess(cwd: string, args: readonly string[], timeoutMs = 120_000): Promise<RagenResult> {
  try {
    const { stdout, stderr } = await run(process.execPath, [BIN, ...args], { cwd, timeout: timeoutMs });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}
