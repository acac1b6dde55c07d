// tools/device/full-run.sh's real run (not FULL_RUN_TINY), listed without running anything (FULL_RUN_DRY=1): by
// default it runs exactly the record's sections, each figure of the record has the section that measures it, and
// their limits fit the 9 minutes (540 s, 15 of them kept back for the record).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { HF_PYTHON } from '../hf-python';

const dir = mkdtempSync(path.join(os.tmpdir(), 'full-run-dry-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('full-run.sh, the real run listed (FULL_RUN_DRY=1)', () => {
  it("runs the record's sections within 9 minutes, each with the flags its figure needs", () => {
    const out = path.join(dir, 'out');
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      FULL_RUN_DRY: '1',
      OUT: out,
      WORK: path.join(dir, 'work'),
      PY: HF_PYTHON,
    };
    for (const k of Object.keys(env)) if (/^FULL_RUN_(?!DRY)/.test(k)) delete env[k];
    execFileSync('bash', ['tools/device/full-run.sh'], { env, encoding: 'utf8', timeout: 60_000 });
    const sections = readFileSync(path.join(out, 'summary.txt'), 'utf8')
      .split('\n')
      .map((l) => /^== (\S+) \(limit (\d+)s\): (.*)$/.exec(l))
      .filter((m) => m !== null)
      .map((m) => ({ name: m[1], limit: Number(m[2]), command: m[3] }));
    expect(sections.map((s) => s.name)).toEqual(['init', 'speed', 'update', 'memory', 'train', 'torch-paper']);
    const fixed = sections.filter((s) => s.name !== 'torch-paper').reduce((sum, s) => sum + s.limit, 0);
    const rest = sections.find((s) => s.name === 'torch-paper')!;
    expect(fixed + 15).toBeLessThanOrEqual(540 - 25); // torch-paper keeps at least 25 s, the record 15
    expect(rest.limit).toBeGreaterThan(540 - 15 - 60); // what is left: nearly all when nothing ran (the set-up takes seconds)
    const command = (name: string) => sections.find((s) => s.name === name)!.command;
    expect(command('speed')).toMatch(/bench --only model .*--shapes qwen0\.5b --gen-batches 128 /); // gen128, adapterFeatures
    expect(command('update')).toMatch(/update-profile\.ts --backend webgpu --tokens 1536 /); // trainTokensPerSecond1x1536
    expect(command('memory')).toMatch(/--shapes qwen0\.5b .*--tokens 1x1536 /); // peakGiB
    expect(command('train')).toMatch(/train --preset sokoban-qwen .*--steps 1 /); // paperStep
    expect(command('train')).toMatch(
      /^bash tools\/device\/stop-after-steps\.sh \S+\/metrics\.jsonl 1 node bin\/ragen\.js train /,
    );
    expect(command('torch-paper')).toMatch(/torch_step\.py --paper /); // torch figures
    // Generation by continuous batching (FULL_RUN_ENGINE's default): gen128 and the paper step's rollouts.
    expect(command('speed')).toMatch(/ --gen-engine continuous /);
    expect(command('train')).toMatch(/ --set rollout\.engine=continuous/);
  });
});
