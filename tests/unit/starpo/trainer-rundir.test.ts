// The run directory on disk (src/node/runDir.ts): atomic checkpoints, pruning, and what --resume picks.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readCheckpointFiles as readCheckpoint } from '../../../src/model/checkpointDir';
import { checkpointDir, holdsRun, latestCheckpoint, listCheckpoints, writeCheckpoint } from '../../../src/node/runDir';

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ragen-rundir-'));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

const bytes = (s: string) => new TextEncoder().encode(s);
const files = (step: number) => ({
  'config.json': bytes('{}'),
  'critic/model.safetensors': bytes(`critic ${step}`),
  'trainer_state.json': bytes(JSON.stringify({ step })),
});

describe('run directory', () => {
  it('writes checkpoints with sub-directories, reads them back, and keeps only the newest k', () => {
    expect(holdsRun(dir)).toBe(false);
    writeCheckpoint(dir, 2, files(2));
    writeCheckpoint(dir, 4, files(4));
    expect(holdsRun(dir)).toBe(true);
    const back = readCheckpoint(checkpointDir(dir, 4));
    expect(Object.keys(back).sort()).toEqual(['config.json', 'critic/model.safetensors', 'trainer_state.json']);
    expect(new TextDecoder().decode(back['critic/model.safetensors'])).toBe('critic 4');
    writeCheckpoint(dir, 6, files(6), 2);
    expect(listCheckpoints(dir).map((c) => c.step)).toEqual([4, 6]);
    // Rewriting a step replaces it whole.
    writeCheckpoint(dir, 6, { ...files(6), 'critic/model.safetensors': bytes('again') });
    expect(new TextDecoder().decode(readCheckpoint(checkpointDir(dir, 6))['critic/model.safetensors'])).toBe('again');
    expect(fs.readdirSync(path.join(dir, 'checkpoints')).filter((n) => n.startsWith('.'))).toEqual([]);
  });

  it('never offers a half-written checkpoint to --resume, and refuses file names that escape the directory', () => {
    writeCheckpoint(dir, 2, files(2));
    // A kill during a write leaves a hidden temp directory, or a step directory without trainer_state.json.
    fs.mkdirSync(path.join(dir, 'checkpoints', '.step-4.tmp-1-1'), { recursive: true });
    fs.mkdirSync(path.join(dir, 'checkpoints', 'step-6'), { recursive: true });
    fs.writeFileSync(path.join(dir, 'checkpoints', 'step-6', 'config.json'), '{}');
    expect(latestCheckpoint(dir)?.step).toBe(2);
    expect(() => writeCheckpoint(dir, 8, { '../evil': bytes('x') })).toThrow(/bad file name/);
    expect(fs.existsSync(path.join(dir, 'evil'))).toBe(false);
    expect(latestCheckpoint(dir)?.step).toBe(2);
  });
});
