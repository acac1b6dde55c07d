// src/node/safeWrite.ts: what an interrupted write leaves is tidied by the next write to the same output (issue 31:
// `ragen warmstart` left OUT.tmp-PID-STAMP folders that nothing removed; tests/unit/cli/write-guards.test.ts runs
// that case through the command), and only once its process is gone.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isRunDir, pruneStaleTemps, writeDirAtomic, writeFileAtomic } from '../../../src/node/safeWrite';

let tmp: string;
/** A pid that is certainly not running: above the kernel's pid limit. */
const DEAD = 2 ** 22 + 1;

beforeAll(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ragen-safe-write-'));
});
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

describe('stale temp siblings', () => {
  it('removes those of dead processes, keeps a live one, and puts a moved-aside output back when the output is missing', () => {
    const target = path.join(tmp, 'out');
    fs.mkdirSync(`${target}.tmp-${DEAD}-1`);
    fs.writeFileSync(`${target}.tmp-${process.pid}-2`, 'a write in progress');
    fs.mkdirSync(`${target}.old-${DEAD}-3`);
    fs.writeFileSync(path.join(`${target}.old-${DEAD}-3`, 'config.json'), '{}');
    const done = pruneStaleTemps(target);
    expect(done).toHaveLength(2);
    expect(fs.existsSync(`${target}.tmp-${DEAD}-1`)).toBe(false);
    expect(fs.existsSync(`${target}.tmp-${process.pid}-2`)).toBe(true); // ours, still writing
    expect(fs.readFileSync(path.join(target, 'config.json'), 'utf8')).toBe('{}'); // restored
    fs.rmSync(`${target}.tmp-${process.pid}-2`);
  });
});

describe('atomic writes', () => {
  it('writeFileAtomic and writeDirAtomic replace their output whole and leave no sibling', () => {
    const file = path.join(tmp, 'card.json');
    writeFileAtomic(file, 'one');
    writeFileAtomic(file, 'two');
    expect(fs.readFileSync(file, 'utf8')).toBe('two');
    const dir = path.join(tmp, 'export');
    writeDirAtomic(dir, { 'a.txt': 'a', 'sub/b.txt': 'b' });
    writeDirAtomic(dir, { 'c.txt': 'c' });
    expect(fs.readdirSync(dir)).toEqual(['c.txt']);
    expect(fs.readdirSync(tmp).filter((n) => /\.(tmp|old)-/.test(n))).toEqual([]);
    expect(() => writeDirAtomic(path.join(tmp, 'bad'), { '../escape': 'x' })).toThrow(/bad file name/);
    expect(fs.existsSync(path.join(tmp, 'escape'))).toBe(false);
  });

  it('isRunDir: a training run (metrics, checkpoints, lock or run config), not a Hugging Face model directory', () => {
    const hf = path.join(tmp, 'hf');
    fs.mkdirSync(hf);
    fs.writeFileSync(path.join(hf, 'config.json'), JSON.stringify({ model_type: 'qwen2' }));
    expect(isRunDir(hf)).toBe(false);
    const run = path.join(tmp, 'a-run');
    fs.mkdirSync(run);
    fs.writeFileSync(path.join(run, 'config.json'), JSON.stringify({ trainer: {} }));
    expect(isRunDir(run)).toBe(true);
  });
});
