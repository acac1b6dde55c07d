// One training step of the paper's preset (`--preset sokoban-qwen`) on a model of Qwen2.5-0.5B's shape, cut to 2
// decoder layers (vocabulary 151,936 and every width as Qwen's), made by `ragen init-model`, on wasm, through the real
// CLI: RAGEN's prompt, the Qwen chat template, rollout, scoring, the update and a checkpoint.
//
// Why LoRA (RAGEN's base-lora.yaml: rank 64, alpha 64, all linear layers) and not full fine-tuning: tfjs-wasm's
// heap is 4 GiB, and full fine-tuning of even this 2-layer cut holds 2.65 GiB of actor state (166M parameters x
// weights, gradients, two AdamW moments) plus as much again for the critic. With LoRA the base is frozen and only
// the adapters carry gradients and moments, so the step fits. Full fine-tuning of the real 24-layer model is what
// tools/device/full-run.sh runs on a GPU. The batch is shrunk to keep CI short: 2 env groups of one rollout each,
// one turn, 8 new tokens, no validation, and the StarPO-S filter keeps one of the two groups, so the update is one
// trajectory of about 260 tokens (RAGEN's full Sokoban prompt and the answer). The actor's update of it is still
// the step's largest part (about 20 s on wasm; the full-vocabulary LM head runs on the answer's tokens only).
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { indexSafetensors, parseSafetensors } from '../../../src/model/safetensors';
import { qwenInitModel2Layers } from '../sharedFixtures';

const run = promisify(execFile);
const BIN = path.resolve('bin/ragen.js');
let tmp: string;
let modelDir: string;
let runDir: string;

async function ragen(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [BIN, ...args], {
      cwd: tmp,
      timeout: 900_000,
      maxBuffer: 1 << 24,
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: e.code ?? -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

const SHRUNK_STEP = [
  '--set',
  'lora.enabled=true',
  '--set',
  'actor.lr=1e-5',
  '--set',
  'critic.lr=1e-4',
  '--set',
  'agent.envGroups=2',
  '--set',
  'agent.trainEnvs.0.nGroups=2',
  '--set',
  'agent.groupSize=1',
  '--set',
  'agent.maxTurn=1',
  '--set',
  'rollout.maxNewTokens=8',
  '--set',
  'actor.ppoMiniBatchSize=1',
  '--set',
  'agent.valGroups=1',
  '--set',
  'agent.valEnvs.0.nGroups=1',
  '--set',
  'filter.ratio=0.5',
  '--set',
  'trainer.valBeforeTrain=false',
  '--set',
  'trainer.testFreq=0',
];

beforeAll(async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'train-qwen-shape-'));
  runDir = path.join(tmp, 'run');
  // `ragen init-model --shape qwen2.5-0.5b --layers 2 --out DIR --quiet`, made once per run and shared with
  // init-model.test.ts (training only reads it: the run and its checkpoints go to runDir).
  const { dir, made } = await qwenInitModel2Layers();
  modelDir = dir;
  expect(made.code, made.stderr).toBe(0);
  const trained = await ragen(
    'train',
    '--preset',
    'sokoban-qwen',
    '--set',
    `model=${modelDir}`,
    '--backend',
    'wasm',
    '--steps',
    '1',
    '--out',
    runDir,
    ...SHRUNK_STEP,
  );
  expect(trained.code, trained.stderr).toBe(0);
}, 1_200_000);

afterAll(() => {
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

describe('sokoban-qwen on a 2-layer cut of Qwen2.5-0.5B (init-model), wasm, one step', () => {
  it('logs one step of RAGEN metrics with a finite, non-zero gradient', () => {
    const rows = fs
      .readFileSync(path.join(runDir, 'metrics.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(rows).toHaveLength(1);
    const m = rows[0] as Record<string, number>;
    expect(m.step).toBe(1);
    for (const key of [
      'actor/grad_norm',
      'actor/entropy_loss',
      'actor/pg_loss',
      'critic/vf_loss',
      'response_length/mean',
    ]) {
      expect(Number.isFinite(m[key]), key).toBe(true);
    }
    expect(m['actor/grad_norm']).toBeGreaterThan(0);
    // A random model over Qwen's 151,936 ids: its entropy is near log(151,936) = 11.9 nats, not a tiny vocabulary's.
    expect(m['actor/entropy_loss']).toBeGreaterThan(8);
    const config = JSON.parse(fs.readFileSync(path.join(runDir, 'config.json'), 'utf8'));
    expect(config.model.path).toBe(modelDir);
    expect(config.lora.enabled).toBe(true);
  });

  it('keeps a checkpoint whose adapters moved from their zero start and whose base is the init-model weights', () => {
    const step = path.join(runDir, 'checkpoints', 'step-1');
    const adapters = parseSafetensors(fs.readFileSync(path.join(step, 'adapter', 'adapter_model.safetensors'))).tensors;
    const bNames = Object.keys(adapters).filter((n) => n.includes('lora_B'));
    expect(bNames.length).toBe(2 * 7); // 2 layers x q, k, v, o, gate, up, down
    // PEFT starts B at zero; one AdamW step moves every B.
    for (const n of bNames)
      expect(
        adapters[n].data.some((x) => x !== 0),
        n,
      ).toBe(true);
    // Indexed, not parsed whole: only the tensor compared is decoded (the two files hold 166M weights each).
    const base = indexSafetensors(fs.readFileSync(path.join(step, 'model.safetensors'))).entries;
    const init = indexSafetensors(fs.readFileSync(path.join(modelDir, 'model.safetensors'))).entries;
    const name = 'model.layers.1.mlp.down_proj.weight';
    expect(base[name].shape).toEqual([896, 4864]);
    expect(Array.from(base[name].read().subarray(0, 64))).toEqual(Array.from(init[name].read().subarray(0, 64)));
    expect(base['model.embed_tokens.weight'].shape).toEqual([151936, 896]);
    // init-model writes bf16, as Qwen2.5 ships; the frozen base stays bf16 in the checkpoint (half the bytes, exact).
    expect(Object.values(init).every((e) => e.dtype === 'BF16')).toBe(true);
    for (const [n, e] of Object.entries(base)) expect(e.dtype, n).toBe('BF16');
  });
});
