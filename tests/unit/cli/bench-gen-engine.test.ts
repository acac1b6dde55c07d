// `ragen bench --gen-engine continuous`: the model section's generate rows and the rollout section run through the
// continuous-batching engine, under the rows' usual names, and the notes say so; an unknown engine is
// refused before anything runs.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { expectRefused, ragen } from './cli-fixture';

const dir = mkdtempSync(path.join(os.tmpdir(), 'ragen-gen-engine-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('bench --gen-engine', () => {
  it('continuous: the generate rows and the rollout rows, positive, named as with turns', async () => {
    const json = path.join(dir, 'continuous.json');
    const args = ['--shapes', 'tiny', '--gen-batches', '4', '--rollout-batches', '2,16', '--seconds', '0.05'];
    const out = await ragen('bench', '--only', 'model,rollout', ...args, '--gen-engine', 'continuous', '--json', json);
    expect(out.code).toBe(0);
    const report = JSON.parse(readFileSync(json, 'utf8'));
    for (const key of ['tiny generate tokens/s', 'tiny generate b4 tokens/s']) {
      expect(report.results.model[key]).toBeGreaterThan(0);
    }
    expect(Object.keys(report.results.rollout)).toEqual([2, 16].map((b) => `tiny generate batch ${b} tokens/s`));
    expect(report.notes.model.join('\n')).toMatch(/continuous engine/);
  });

  it('refuses an unknown engine with exit code 2', async () => {
    expectRefused(
      await ragen('bench', '--only', 'model', '--shapes', 'tiny', '--gen-engine', 'vllm'),
      /--gen-engine must be turns or continuous, got 'vllm'/,
    );
  });
});
