// tools/device/full-run.sh's selfcheck and matmul sections, listed without running anything (FULL_RUN_DRY=1): the
// selfcheck section runs tools/device/webgpu-selfcheck.ts at qwen0.5b's 1 x 1,536 tokens on webgpu within its 30 s,
// and is left out on another backend (our own pipelines are WebGPU's).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { HF_PYTHON } from '../hf-python';

const dir = mkdtempSync(path.join(os.tmpdir(), 'full-run-selfcheck-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function listed(backend: string): Array<{ name: string; limit: number; command: string }> {
  const out = path.join(dir, backend);
  const env: NodeJS.ProcessEnv = { ...process.env, OUT: out, WORK: path.join(dir, 'work'), PY: HF_PYTHON };
  for (const k of Object.keys(env)) if (k.startsWith('FULL_RUN_')) delete env[k];
  Object.assign(env, { FULL_RUN_DRY: '1', FULL_RUN_ONLY: 'selfcheck matmul', FULL_RUN_BACKEND: backend });
  execFileSync('bash', ['tools/device/full-run.sh'], { env, encoding: 'utf8', timeout: 60_000 });
  return readFileSync(path.join(out, 'summary.txt'), 'utf8')
    .split('\n')
    .map((l) => /^== (\S+) \(limit (\d+)s\): (.*)$/.exec(l))
    .filter((m) => m !== null)
    .map((m) => ({ name: m[1], limit: Number(m[2]), command: m[3] }));
}

describe('full-run.sh selfcheck (FULL_RUN_DRY=1)', () => {
  it('checks our own pipelines before the matmul section times them, on webgpu only', () => {
    const sections = listed('webgpu');
    expect(sections.map((s) => s.name)).toEqual(['selfcheck', 'matmul']);
    expect(sections[0].limit).toBe(30);
    expect(sections[0].command).toMatch(
      /^node --import tsx tools\/device\/webgpu-selfcheck\.ts --tokens 1536 --json \S+\/selfcheck\.json$/,
    );
    expect(listed('wasm').map((s) => s.name)).toEqual(['matmul']);
  });
});
