// `ragen export --to ragen` as a user runs it (spawning bin/ragen.js) on a run trained here: bad input stops before
// anything is written (exit 2, named; most cases through main() in-process); a good export holds the Hugging Face model
// directories (f32 byte for byte, or bf16 rounded from them), RAGEN's config as YAML and as an override list carrying
// the run's settings, and a README with the launch command, the warnings and the env tags' differences.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import YAML from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../../../src/model/backend';
import { saveCheckpointDir } from '../../../src/model/checkpointDir';
import { floatToBf16Bits, parseSafetensors } from '../../../src/model/safetensors';
import { shardedSafetensorsFiles } from '../../../src/model/safetensorsShards';
import { parseRunConfig } from '../../../src/starpo/config';
import { nestRagenValues, parseHydraOverrides } from '../../../src/interop/ragenHydra';
import { toRagen } from '../../../src/interop/ragenMapping';
import { tinyBanditConfig, tinyPolicy } from '../starpo/trainer-fixture';
import { ragenProcess } from '../ragenProcess';
import { expectRefused, ragen as ragenInProcess } from './cli-fixture';

let tmp: string;

const ragen = (...args: string[]) => ragenProcess(tmp, args);

beforeAll(async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ragen-export-'));
  await initBackend('cpu');
  const { model, tokenizer } = tinyPolicy();
  await saveCheckpointDir(path.join(tmp, 'tiny-model'), model, tokenizer);
  model.dispose();
  const config = tinyBanditConfig({ trainer: { totalSteps: 2, saveFreq: 1, testFreq: 2 } });
  fs.writeFileSync(
    path.join(tmp, 'tiny.json'),
    JSON.stringify({ ...config, model: { ...config.model, path: path.join(tmp, 'tiny-model') } }),
  );
  const trained = await ragen('train', '--config', 'tiny.json', '--out', 'run', '--backend', 'wasm');
  expect(trained.code, trained.stderr).toBe(0);
}, 180_000);

afterAll(() => {
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

describe('ragen export: bad input stops before anything is written (exit 2)', () => {
  it('names the problem: target, dtype, run, step, output directory, GPU count', async () => {
    fs.mkdirSync(path.join(tmp, 'no-checkpoints'));
    fs.copyFileSync(path.join(tmp, 'run', 'config.json'), path.join(tmp, 'no-checkpoints', 'config.json'));
    fs.mkdirSync(path.join(tmp, 'taken'));
    fs.writeFileSync(path.join(tmp, 'taken', 'keep.txt'), 'mine');
    const cases: [string[], RegExp][] = [
      [['--run', 'run', '--to', 'verl', 'o1'], /--to verl: unknown export target \(the only one is 'ragen'\)/],
      [['--run', 'run', '--to', 'ragen', '--dtype', 'f16', 'o2'], /--dtype must be f32 or bf16, got 'f16'/],
      [['--run', 'nowhere', '--to', 'ragen', 'o3'], /--run nowhere: no such directory/],
      [['--run', 'tiny-model', '--to', 'ragen', 'o4'], /--run tiny-model: .*not a run directory/],
      [['--run', 'no-checkpoints', '--to', 'ragen', 'o5'], /no complete checkpoint.*saveFreq/],
      [
        ['--run', 'run', '--step', '7', '--to', 'ragen', 'o6'],
        /--step 7: run has no checkpoint of that step \(steps: 1, 2\)/,
      ],
      [['--run', 'run', '--to', 'ragen', 'taken'], /taken already exists and is not an empty directory/],
      [
        ['--run', 'run', '--to', 'ragen', '--gpus-per-node', '0', 'o7'],
        /--gpus-per-node must be an integer >= 1, got '0'/,
      ],
    ];
    // commander's own message as a user meets it (the real command: exit code and stderr); the rest through main() in
    // this process: the same code path without a Node start and a tfjs load per case.
    const spawned = await ragen('export', '--run', 'run', 'o8');
    expect(spawned.code).toBe(2);
    expect(spawned.stderr).toMatch(/required option '--to <target>'/);
    const cwd = process.cwd();
    process.chdir(tmp);
    try {
      for (const [args, pattern] of cases) expectRefused(await ragenInProcess('export', ...args), pattern);
    } finally {
      process.chdir(cwd);
    }
    for (const o of ['o1', 'o2', 'o3', 'o4', 'o5', 'o6', 'o7', 'o8'])
      expect(fs.existsSync(path.join(tmp, o)), o).toBe(false);
    expect(fs.readdirSync(path.join(tmp, 'taken'))).toEqual(['keep.txt']);
    expect(fs.readdirSync(tmp).some((n) => n.includes('.tmp-'))).toBe(false);
  });
});

describe('ragen export --to ragen', () => {
  it('writes the f32 model byte for byte, the critic, RAGEN config in two forms and a README', async () => {
    const r = await ragen('export', '--run', 'run', '--to', 'ragen', 'out-f32');
    expect(r.code, r.stderr).toBe(0);
    const out = path.join(tmp, 'out-f32');
    expect(r.stdout).toContain(`python train.py --config-dir ${out} --config-name ragen_export`);
    expect(fs.readdirSync(out).sort()).toEqual([
      'README.md',
      'overrides.txt',
      'qwen2-critic',
      'qwen2-policy',
      'ragen_export.yaml',
    ]);
    const ckpt = path.join(tmp, 'run', 'checkpoints', 'step-2');
    // Only model files: no optimizer, reference or trainer state.
    expect(fs.readdirSync(path.join(out, 'qwen2-policy')).sort()).toEqual([
      'config.json',
      'generation_config.json',
      'model.safetensors',
      'tokenizer.json',
      'tokenizer_config.json',
    ]);
    expect(
      Buffer.compare(
        fs.readFileSync(path.join(out, 'qwen2-policy/model.safetensors')),
        fs.readFileSync(path.join(ckpt, 'model.safetensors')),
      ),
    ).toBe(0);
    expect(
      Buffer.compare(
        fs.readFileSync(path.join(out, 'qwen2-critic/model.safetensors')),
        fs.readFileSync(path.join(ckpt, 'critic/model.safetensors')),
      ),
    ).toBe(0);
    expect(JSON.parse(fs.readFileSync(path.join(out, 'qwen2-critic/config.json'), 'utf8')).architectures).toEqual([
      'Qwen2ForTokenClassification',
    ]);

    // The YAML and the override list both carry exactly what the mapping gives for the run's config.
    const config = parseRunConfig(JSON.parse(fs.readFileSync(path.join(tmp, 'run', 'config.json'), 'utf8')));
    const expected = nestRagenValues(
      toRagen(config, {
        modelPath: path.join(out, 'qwen2-policy'),
        criticPath: path.join(out, 'qwen2-critic'),
        maxPositions: 512,
        gpusPerNode: 1,
        nodes: 1,
        experimentName: 'run-step2',
      }).values,
    );
    const { defaults, ...yaml } = YAML.parse(fs.readFileSync(path.join(out, 'ragen_export.yaml'), 'utf8'));
    expect(defaults).toEqual(['base', '_self_']);
    expect(yaml).toEqual(expected);
    expect(parseHydraOverrides(fs.readFileSync(path.join(out, 'overrides.txt'), 'utf8').split('\n'))).toEqual(expected);
    expect(yaml.actor_rollout_ref.actor.optim.lr).toBe(1e-3); // the run's own values, not RAGEN's defaults
    expect(yaml.es_manager.val.env_configs.tags).toEqual(['Bandit', 'BanditTest']);

    const readme = fs.readFileSync(path.join(out, 'README.md'), 'utf8');
    expect(readme).toContain(
      'python train.py --config-dir "$EXPORT" --config-name ragen_export model_path="$EXPORT/qwen2-policy" critic.model.path="$EXPORT/qwen2-critic"',
    );
    expect(readme).toMatch(/\| `model\.promptStyle` \| `"compact"` \| .*never saw/);
    expect(readme).toMatch(/\*\*Bandit\*\*: .*seed/);
    expect(readme).toMatch(/\*\*BanditTest\*\*/);
    expect(readme).toMatch(/\| `echoTrap\.patience` \| `2` \|/); // no RAGEN key, listed, not dropped
    expect(readme).toContain('ragen import-metrics');
    expect(r.stderr).toMatch(/warning: model\.promptStyle/);
    expect(r.stderr).toMatch(/more setting\(s\) without a RAGEN key .*README\.md/);
  });

  it('--dtype bf16 --step 1 writes the step-1 weights rounded to bfloat16, torch_dtype bfloat16', async () => {
    const r = await ragen(
      'export',
      '--run',
      'run',
      '--step',
      '1',
      '--to',
      'ragen',
      '--dtype',
      'bf16',
      '--quiet',
      'out-bf16',
    );
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toBe('');
    const out = path.join(tmp, 'out-bf16');
    const source = parseSafetensors(fs.readFileSync(path.join(tmp, 'run/checkpoints/step-1/model.safetensors')));
    const exported = parseSafetensors(fs.readFileSync(path.join(out, 'qwen2-policy/model.safetensors')));
    expect(Object.keys(exported.tensors).sort()).toEqual(Object.keys(source.tensors).sort());
    expect(exported.metadata.format).toBe('pt');
    for (const [name, t] of Object.entries(exported.tensors)) {
      expect(t.dtype, name).toBe('BF16');
      const want = Array.from(
        new Uint32Array(source.tensors[name].data.buffer),
        (b) => (floatToBf16Bits(b) << 16) >>> 0,
      );
      expect(Array.from(new Uint32Array(t.data.buffer)), name).toEqual(want);
    }
    expect(JSON.parse(fs.readFileSync(path.join(out, 'qwen2-policy/config.json'), 'utf8')).torch_dtype).toBe(
      'bfloat16',
    );
    expect(YAML.parse(fs.readFileSync(path.join(out, 'ragen_export.yaml'), 'utf8')).trainer.experiment_name).toBe(
      'run-step1',
    );
  });

  it('a checkpoint with sharded weights (past 2 GiB) exports its shards and its critic', async () => {
    fs.cpSync(path.join(tmp, 'run'), path.join(tmp, 'run-sharded'), { recursive: true });
    const ckpt = path.join(tmp, 'run-sharded', 'checkpoints', 'step-2');
    for (const dir of [ckpt, path.join(ckpt, 'critic')]) {
      const { tensors } = parseSafetensors(fs.readFileSync(path.join(dir, 'model.safetensors')));
      fs.rmSync(path.join(dir, 'model.safetensors'));
      for (const [name, bytes] of Object.entries(
        shardedSafetensorsFiles(tensors, 'model', { metadata: { format: 'pt' }, maxShardBytes: 8192 }),
      )) {
        fs.writeFileSync(path.join(dir, name), bytes);
      }
    }
    const r = await ragen('export', '--run', 'run-sharded', '--to', 'ragen', '--quiet', 'out-sharded');
    expect(r.code, r.stderr).toBe(0);
    for (const [exported, source] of [
      ['qwen2-policy', ckpt],
      ['qwen2-critic', path.join(ckpt, 'critic')],
    ]) {
      const dir = path.join(tmp, 'out-sharded', exported);
      const shards = fs.readdirSync(source).filter((n) => /^model-\d{5}-of-\d{5}\.safetensors$/.test(n));
      expect(shards.length).toBeGreaterThan(1);
      expect(fs.readdirSync(dir).sort()).toEqual(expect.arrayContaining(['model.safetensors.index.json', ...shards]));
      for (const name of [...shards, 'model.safetensors.index.json']) {
        expect(
          Buffer.compare(fs.readFileSync(path.join(dir, name)), fs.readFileSync(path.join(source, name))),
          name,
        ).toBe(0);
      }
    }
  });
});
