// `ragen warmstart`: flags are checked, and a short run writes a checkpoint that loads, with its provenance.
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { main } from '../../../src/cli/main';
import { loadCheckpointDir } from '../../../src/model/checkpointDir';

const scratch = mkdtempSync(path.join(os.tmpdir(), 'warmstart-cli-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

async function run(...args: string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const log = vi.spyOn(console, 'log').mockImplementation((...a: unknown[]) => void out.push(a.join(' ')));
  const error = vi.spyOn(console, 'error').mockImplementation((...a: unknown[]) => void err.push(a.join(' ')));
  const stderr = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
  try {
    const code = await main(['node', 'ragen', 'warmstart', ...args]);
    return { code, out: out.join('\n'), err: err.join('\n') };
  } finally {
    log.mockRestore();
    error.mockRestore();
    stderr.mockRestore();
  }
}

describe('ragen warmstart', () => {
  it('rejects presets without a warm start and bad flags with one clear line (exit 2)', async () => {
    const qwen = await run('--preset', 'sokoban-qwen');
    expect(qwen.code).toBe(2);
    expect(qwen.err).toMatch(/sokoban-qwen.*no warm start/);
    const unknown = await run('--preset', 'tetris-tiny');
    expect(unknown.code).toBe(2);
    expect(unknown.err).toMatch(/unknown preset 'tetris-tiny'/);
    const steps = await run('--preset', 'bandit-tiny', '--steps', '0');
    expect(steps.code).toBe(2);
    expect(steps.err).toMatch(/--steps/);
    const backend = await run('--preset', 'bandit-tiny', '--backend', 'tpu');
    expect(backend.code).toBe(2);
    expect(backend.err).toMatch(/backend 'tpu'/);
  });

  it('checks --out before the fine-tuning, and leaves no temp folder behind', async () => {
    const file = path.join(scratch, 'a-file');
    writeFileSync(file, 'keep me');
    const notes = path.join(scratch, 'notes');
    mkdirSync(notes);
    writeFileSync(path.join(notes, 'todo.txt'), 'keep me too');
    const cases: [string, RegExp][] = [
      [file, /--out .*a-file exists and is not a directory/],
      [path.join(file, 'ckpt'), /--out .*a-file\/ckpt: .*a-file is a file, not a directory/],
      ['/proc/ragen-warmstart', /--out \/proc\/ragen-warmstart: nothing can be created in \/proc/],
      [notes, /refusing to replace .*notes: it is not empty and has no config\.json/],
    ];
    for (const [out, message] of cases) {
      const started = Date.now();
      const r = await run('--preset', 'bandit-tiny', '--steps', '2', '--check-episodes', '2', '--out', out);
      expect(r.code, out).toBe(2);
      expect(r.err).toMatch(message);
      expect(r.out).not.toMatch(/SFT/); // refused before the fine-tuning started
      expect(Date.now() - started).toBeLessThan(10_000);
    }
    expect(readFileSync(file, 'utf8')).toBe('keep me');
    expect(readdirSync(notes)).toEqual(['todo.txt']);
    expect(readdirSync(scratch).filter((n) => /\.(tmp|old)-/.test(n))).toEqual([]);
  });

  it('a short run writes a loadable checkpoint with warmstart.json and prints the figures', async () => {
    const out = path.join(scratch, 'bandit');
    const result = await run('--preset', 'bandit-tiny', '--steps', '2', '--check-episodes', '2', '--out', out);
    expect(result.code).toBe(0);
    expect(result.out).toMatch(/final loss \d+\.\d+/);
    // Not a terminal: progress comes as plain lines (the last step always), not as a redrawn bar.
    expect(result.out).toMatch(/^ {2}SFT 2\/2 steps, loss \d+\.\d+, \d+ s$/m);
    expect(result.out).toMatch(/Bandit +well-formed [\d.]+% of \d+ turns/);
    const ckpt = await loadCheckpointDir(out);
    expect(ckpt.config.hidden_size).toBe(64);
    Object.values(ckpt.weights).forEach((t) => t.dispose());
    const provenance = JSON.parse(readFileSync(path.join(out, 'warmstart.json'), 'utf8'));
    expect(provenance).toMatchObject({ preset: 'bandit-tiny', backend: 'wasm', sft: { steps: 2 } });
    expect(provenance.check.episodes).toBe(2);
  });
});
