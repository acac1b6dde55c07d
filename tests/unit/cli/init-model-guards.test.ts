// `ragen init-model --out DIR` writes only into a new or empty directory, or with --force over a directory it wrote
// itself: never over a run, a checkpoint or a folder of the user's own, --force or not, and everything is checked
// before the first weight is drawn (a layer count past the model's own, an --out under /proc). Each refusal is one
// line, exit 2, and leaves the folder byte for byte as it was. In-process through main(); the one model written is
// Qwen2.5-0.5B cut to 1 layer (about 300 MB, a few seconds).
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INIT_MODEL_MARKER } from '../../../src/model/initModel';
import { expectRefused, ragen, snapshot } from './cli-fixture';

let tmp: string;
const INIT = ['init-model', '--shape', 'qwen2.5-0.5b', '--layers', '1', '--quiet'];

/** A folder with these files (relative path -> text). */
function folder(name: string, files: Record<string, string>): string {
  const dir = path.join(tmp, name);
  for (const [rel, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
    fs.writeFileSync(path.join(dir, rel), text);
  }
  return dir;
}

beforeAll(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ragen-init-model-guards-'));
});

afterAll(() => {
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

describe('ragen init-model never replaces what it did not write', () => {
  it('refuses a run folder, a checkpoint and a project folder holding a config.json, with and without --force', async () => {
    const run = folder('run', {
      'config.json': '{"trainer":{}}',
      'metrics.jsonl': '{"step":1}\n',
      'rollouts.jsonl': '{}\n',
      'checkpoints/step-1/config.json': '{"model_type":"qwen2"}',
      'checkpoints/step-1/model.safetensors': 'w',
    });
    const checkpoint = folder('checkpoint', {
      'config.json': '{"model_type":"qwen2"}',
      'model.safetensors': 'w',
      'tokenizer.json': '{}',
    });
    const project = folder('project', { 'config.json': '{}', 'package.json': '{}', 'src/main.ts': 'export {};' });
    for (const [dir, why] of [
      [run, /already holds a run/],
      [path.join(run, 'checkpoints', 'step-1'), /lies inside the checkpoints of the run/],
      [
        checkpoint,
        /is not empty \(config\.json, model\.safetensors, tokenizer\.json\) and was not written by init-model/,
      ],
      [
        project,
        /is not empty .* and was not written by init-model: init-model writes only into a new or empty directory/,
      ],
    ] as const) {
      const before = snapshot(dir);
      expectRefused(await ragen(...INIT, '--out', dir), why);
      expectRefused(await ragen(...INIT, '--out', dir, '--force'), why);
      expect(snapshot(dir)).toEqual(before);
    }
    expect(fs.readdirSync(tmp).filter((n) => /\.(tmp|old)-/.test(n))).toEqual([]);
  });

  it("refuses a file, an unwritable place and a layer count past the model's own before any work", async () => {
    const file = folder('files', { 'notes.txt': 'mine' });
    expectRefused(await ragen(...INIT, '--out', path.join(file, 'notes.txt')), /exists and is not a directory/);
    expect(fs.readFileSync(path.join(file, 'notes.txt'), 'utf8')).toBe('mine');
    // Node's recursive mkdir never returns under /proc: the check must come first.
    expectRefused(
      await ragen(...INIT, '--out', '/proc/ragen-test/model'),
      /^ragen: --out \/proc\/ragen-test\/model: nothing can be created in \/proc/,
    );
    const t0 = Date.now();
    expectRefused(
      await ragen('init-model', '--shape', 'qwen2.5-0.5b', '--layers', '999999', '--out', path.join(tmp, 'deep')),
      /^ragen: --layers must be an integer from 1 to 24, got '999999'$/,
    );
    expectRefused(
      await ragen('init-model', '--shape', 'qwen2.5-3b', '--layers', '37', '--out', path.join(tmp, 'deep')),
      /^ragen: --layers must be an integer from 1 to 36, got '37'$/,
    );
    expect(Date.now() - t0).toBeLessThan(5_000);
    expect(fs.existsSync(path.join(tmp, 'deep'))).toBe(false);
  });

  it('writes into an empty folder; replaces it only with --force, and only while it holds nothing but its own files', async () => {
    const out = path.join(tmp, 'model');
    fs.mkdirSync(out);
    const made = await ragen(...INIT, '--out', out);
    expect(made.code, made.err).toBe(0);
    expect(fs.readdirSync(out).sort()).toEqual(
      [
        INIT_MODEL_MARKER,
        'config.json',
        'generation_config.json',
        'model.safetensors',
        'tokenizer.json',
        'tokenizer_config.json',
      ].sort(),
    );
    expect(JSON.parse(fs.readFileSync(path.join(out, INIT_MODEL_MARKER), 'utf8'))).toMatchObject({
      shape: 'qwen2.5-0.5b',
      layers: 1,
      seed: 0,
    });

    const first = snapshot(out);
    expectRefused(
      await ragen(...INIT, '--out', out),
      /already holds a model written by init-model: pass --force to replace it/,
    );
    expect(snapshot(out)).toEqual(first);

    const replaced = await ragen(...INIT, '--seed', '1', '--out', out, '--force');
    expect(replaced.code, replaced.err).toBe(0);
    const second = snapshot(out);
    expect(second['model.safetensors']).not.toEqual(first['model.safetensors']); // another seed, other weights
    expect(second['config.json']).toEqual(first['config.json']);

    // Something of the user's inside it: no longer only init-model's, so --force refuses too.
    fs.writeFileSync(path.join(out, 'notes.md'), 'mine');
    const withNotes = snapshot(out);
    expectRefused(await ragen(...INIT, '--out', out, '--force'), /was not written by init-model/);
    expect(snapshot(out)).toEqual(withNotes);
    expect(fs.readdirSync(tmp).filter((n) => /\.(tmp|old)-/.test(n))).toEqual([]);
  }, 120_000);
});
