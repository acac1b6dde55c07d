// A LoRA run's checkpoints under every command that reads them (export, eval, train --resume): one rule for what a
// checkpoint may hold, so each damaged case is refused by all three, in one line with exit 2 and nothing changed:
// an adapter_config.json whose rank its weights do not have (export merged such a checkpoint with the wrong scale),
// a shard index naming a file outside the checkpoint, a shard that is a symbolic link out of it. A rank wider than
// the model is refused before any adapter is allocated, and a start that fails leaves nothing behind that blocks the
// next one. In-process through main(), on a tiny LoRA run trained here (2 steps, a checkpoint after each).
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { saveCheckpointDir } from '../../../src/model/checkpointDir';
import { indexSafetensors } from '../../../src/model/safetensors';
import { tinyBanditConfig, tinyPolicy } from '../starpo/trainer-fixture';
import { expectRefused, ragen, snapshot } from './cli-fixture';

let tmp: string;
let run: string;
let configFile: string;

beforeAll(async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ragen-lora-checkpoints-'));
  const { model, tokenizer } = tinyPolicy();
  await saveCheckpointDir(path.join(tmp, 'tiny-model'), model, tokenizer);
  model.dispose();
  const config = tinyBanditConfig({
    lora: { enabled: true, rank: 4, alpha: 8 },
    trainer: { totalSteps: 2, saveFreq: 1, testFreq: 2 },
  });
  configFile = path.join(tmp, 'tiny-lora.json');
  fs.writeFileSync(
    configFile,
    JSON.stringify({ ...config, model: { ...config.model, path: path.join(tmp, 'tiny-model') } }),
  );
  run = path.join(tmp, 'run');
  const r = await ragen('train', '--config', configFile, '--out', run);
  expect(r.code, r.err).toBe(0);
}, 120_000);

afterAll(() => {
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

function copyRun(name: string): string {
  const dir = path.join(tmp, name);
  fs.cpSync(run, dir, { recursive: true });
  return dir;
}

/** Every command that reads the newest checkpoint of `dir`, each refused with `why` and nothing changed. */
async function allRefuse(dir: string, why: RegExp): Promise<void> {
  const before = snapshot(dir);
  expectRefused(
    await ragen('export', '--run', dir, '--to', 'ragen', '--quiet', path.join(tmp, `export-${path.basename(dir)}`)),
    why,
  );
  expectRefused(await ragen('eval', '--checkpoint', dir, '--episodes', '2', '--backend', 'cpu', '--quiet'), why);
  expectRefused(await ragen('train', '--config', configFile, '--out', dir, '--resume', '--steps', '3'), why);
  expect(snapshot(dir)).toEqual(before);
  expect(fs.existsSync(path.join(tmp, `export-${path.basename(dir)}`))).toBe(false);
}

describe('a LoRA checkpoint under export, eval and resume', () => {
  it('the intact run exports with the adapters folded in (W + alpha/r B A)', async () => {
    const out = path.join(tmp, 'export-ok');
    const r = await ragen('export', '--run', run, '--to', 'ragen', '--quiet', out);
    expect(r.code, r.err).toBe(0);
    const read = (file: string) => indexSafetensors(new Uint8Array(fs.readFileSync(file))).entries;
    const ckpt = path.join(run, 'checkpoints', 'step-2');
    const base = read(path.join(ckpt, 'model.safetensors'));
    const adapters = read(path.join(ckpt, 'adapter', 'adapter_model.safetensors'));
    const exported = read(path.join(out, 'qwen2-policy', 'model.safetensors'));
    const name = 'model.layers.0.mlp.down_proj';
    const a = adapters[`base_model.model.${name}.lora_A.weight`],
      b = adapters[`base_model.model.${name}.lora_B.weight`];
    const [outDim, inDim] = base[`${name}.weight`].shape,
      rank = a.shape[0];
    const w = base[`${name}.weight`].read(),
      av = a.read(),
      bv = b.read(),
      merged = exported[`${name}.weight`].read();
    expect(rank).toBe(4);
    let maxDiff = 0,
      moved = 0;
    for (let o = 0; o < outDim; o++) {
      for (let i = 0; i < inDim; i++) {
        let ba = 0;
        for (let k = 0; k < rank; k++) ba += bv[o * rank + k] * av[k * inDim + i];
        maxDiff = Math.max(maxDiff, Math.abs(w[o * inDim + i] + (8 / 4) * ba - merged[o * inDim + i]));
        moved = Math.max(moved, Math.abs(ba));
      }
    }
    expect(moved).toBeGreaterThan(0); // the adapters trained: the check would catch a wrong scale
    expect(maxDiff).toBeLessThan(1e-6);
  });

  it('refuses an adapter_config.json whose r its weights do not have (r 2 over rank-4 weights)', async () => {
    const dir = copyRun('wrong-rank');
    const file = path.join(dir, 'checkpoints', 'step-2', 'adapter', 'adapter_config.json');
    fs.writeFileSync(file, JSON.stringify({ ...JSON.parse(fs.readFileSync(file, 'utf8')), r: 2 }));
    await allRefuse(dir, /has shape \[4,\d+\], expected \[2,\d+\]|rank 4.*asks for rank 2|asks for rank 4/);
  }, 60_000);

  it('refuses a shard index that names a file outside the checkpoint', async () => {
    const dir = copyRun('evil-index');
    const ckpt = path.join(dir, 'checkpoints', 'step-2');
    const names = Object.keys(
      indexSafetensors(new Uint8Array(fs.readFileSync(path.join(ckpt, 'model.safetensors')))).entries,
    );
    fs.renameSync(path.join(ckpt, 'model.safetensors'), path.join(dir, 'evil.safetensors'));
    fs.writeFileSync(
      path.join(ckpt, 'model.safetensors.index.json'),
      JSON.stringify({ metadata: {}, weight_map: Object.fromEntries(names.map((n) => [n, '../../evil.safetensors'])) }),
    );
    await allRefuse(
      dir,
      /names "\.\.\/\.\.\/evil\.safetensors": a shard must be a \.safetensors file beside the index/,
    );
  }, 60_000);

  it('refuses a shard that is a symbolic link to a file outside the checkpoint', async () => {
    const dir = copyRun('symlink-out');
    const ckpt = path.join(dir, 'checkpoints', 'step-2');
    const names = Object.keys(
      indexSafetensors(new Uint8Array(fs.readFileSync(path.join(ckpt, 'model.safetensors')))).entries,
    );
    const outside = path.join(tmp, 'outside.safetensors');
    fs.renameSync(path.join(ckpt, 'model.safetensors'), outside);
    fs.symlinkSync(outside, path.join(ckpt, 'model-00001-of-00001.safetensors'));
    fs.writeFileSync(
      path.join(ckpt, 'model.safetensors.index.json'),
      JSON.stringify({
        metadata: {},
        weight_map: Object.fromEntries(names.map((n) => [n, 'model-00001-of-00001.safetensors'])),
      }),
    );
    await allRefuse(
      dir,
      /model-00001-of-00001\.safetensors is a symbolic link to .*outside\.safetensors, outside the checkpoint/,
    );
  }, 60_000);
});

describe('a LoRA rank wider than the model, and a failed start', () => {
  it('is refused before any adapter is allocated, and leaves --out as it was, so the next start needs no --resume', async () => {
    const out = path.join(tmp, 'wide');
    const t0 = Date.now();
    expectRefused(
      await ragen('train', '--config', configFile, '--out', out, '--set', 'lora.rank=16384'),
      /LoRA: rank 16384 is wider than the model \(hidden_size 16\): choose a rank from 1 to 16/,
    );
    expect(Date.now() - t0).toBeLessThan(20_000);
    expect(fs.existsSync(out)).toBe(false); // nothing left: no empty metrics.jsonl that looks like a run

    fs.mkdirSync(out); // an empty folder the user made stays, and stays empty
    expectRefused(
      await ragen('train', '--config', configFile, '--out', out, '--set', 'lora.rank=17'),
      /rank 17 is wider than the model/,
    );
    expect(fs.readdirSync(out)).toEqual([]);
    const next = await ragen('train', '--config', configFile, '--out', out, '--steps', '1');
    expect(next.code, next.err).toBe(0);
    expect(fs.readFileSync(path.join(out, 'metrics.jsonl'), 'utf8').trim().split('\n').length).toBeGreaterThan(0);
  }, 120_000);
});
