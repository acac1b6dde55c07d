// The CLI's backend choice as a newcomer meets it: 'auto' asks Dawn for an adapter in a child process (so a machine
// without a GPU never shows Dawn's and the Vulkan loader's stderr noise), skips a software adapter, and prints ONE
// line saying which backend it chose and why; the per-step line names each validation env.
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../../../src/model/backend';
import { saveCheckpointDir } from '../../../src/model/checkpointDir';
import { chooseCliBackend, readProbeOutput } from '../../../src/model/webgpuProbe';
import { formatValidation } from '../../../src/cli/train';
import { tinyBanditConfig, tinyPolicy } from '../starpo/trainer-fixture';

describe('readProbeOutput', () => {
  it('tells a GPU, a software adapter, no adapter and a crashed probe apart', () => {
    const line = (adapter: unknown) => `${JSON.stringify({ adapter })}\n`;
    expect(
      readProbeOutput(
        line({ vendor: 'nvidia', architecture: 'hopper', description: 'NVIDIA H100', isFallbackAdapter: false }),
        '',
      ),
    ).toEqual({
      kind: 'gpu',
      adapter: 'nvidia hopper NVIDIA H100',
    });
    // Dawn on Chromium's SwiftShader ICD: flagged as a fallback adapter.
    expect(
      readProbeOutput(line({ vendor: 'google', architecture: 'swiftshader', isFallbackAdapter: true }), '').kind,
    ).toBe('software');
    // Mesa's llvmpipe does not always set the flag: its name gives it away.
    expect(readProbeOutput(line({ vendor: 'mesa', device: 'llvmpipe (LLVM 15.0.6, 256 bits)' }), '').kind).toBe(
      'software',
    );
    expect(readProbeOutput(line(null), 'error: XDG_RUNTIME_DIR is invalid')).toEqual({
      kind: 'none',
      reason: 'no GPU adapter found (Dawn needs a Vulkan driver for a GPU)',
    });
    expect(readProbeOutput('', 'Segmentation fault\nmore')).toEqual({
      kind: 'none',
      reason: 'the WebGPU probe crashed (Segmentation fault)',
    });
  });
});

describe('chooseCliBackend', () => {
  it("'auto' on a machine whose only adapter is software picks wasm and says why in one line", async () => {
    const lines: string[] = [];
    const info = await chooseCliBackend('auto', (l) => lines.push(l), {
      probe: async () => ({ kind: 'software', adapter: 'google swiftshader SwiftShader driver 5.0.0' }),
    });
    expect(info.name).toBe('wasm');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /^backend: wasm \(auto: the only WebGPU adapter is a software renderer \(google swiftshader .*\).*wasm is the fastest CPU backend\)$/,
    );
  });

  it("'auto' without any adapter picks wasm, naming the missing GPU", async () => {
    const lines: string[] = [];
    const info = await chooseCliBackend('auto', (l) => lines.push(l), {
      probe: async () => ({ kind: 'none', reason: 'no GPU adapter found' }),
    });
    expect(info.name).toBe('wasm');
    expect(lines).toEqual(['backend: wasm (auto: no GPU adapter found; wasm is the fastest CPU backend)']);
  });

  it('an explicit backend is started as asked, and said so', async () => {
    const lines: string[] = [];
    await chooseCliBackend('cpu', (l) => lines.push(l));
    expect(lines).toEqual(['backend: cpu (asked for with --backend cpu)']);
  });
});

describe('formatValidation', () => {
  it('names each validation env instead of averaging them', () => {
    expect(
      formatValidation({
        'val-env/Bandit/success': 0.9375,
        'val-env/BanditTest/success': 0,
        'val-env/Bandit/pass@1': 0.5,
        'timing_s/testing': 3,
      }),
    ).toBe('Bandit 0.94 BanditTest 0.00');
    expect(formatValidation({})).toBe('-');
  });
});

describe('ragen train with the default backend (auto), as a user runs it', () => {
  const run = promisify(execFile);
  let tmp: string;
  let configFile: string;

  beforeAll(async () => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ragen-backend-'));
    await initBackend('cpu');
    const { model, tokenizer } = tinyPolicy();
    await saveCheckpointDir(path.join(tmp, 'tiny-model'), model, tokenizer);
    model.dispose();
    const config = tinyBanditConfig({ trainer: { totalSteps: 1, testFreq: 1, backend: 'auto' } });
    configFile = path.join(tmp, 'tiny.json');
    fs.writeFileSync(
      configFile,
      JSON.stringify({ ...config, model: { ...config.model, path: path.join(tmp, 'tiny-model') } }),
    );
  });

  afterAll(() => {
    if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
  });

  it('prints one backend line, no driver noise, and validation per env', async () => {
    const { stdout, stderr } = await run(
      process.execPath,
      [path.resolve('bin/ragen.js'), 'train', '--config', configFile, '--out', 'run'],
      {
        cwd: tmp,
        timeout: 120_000,
      },
    );
    const backendLines = stdout.split('\n').filter((l) => l.startsWith('backend:'));
    expect(backendLines, stdout).toHaveLength(1);
    if (!backendLines[0].startsWith('backend: webgpu')) {
      // No usable GPU here: Dawn was only asked in the child process, so none of its output reached the user.
      expect(backendLines[0]).toMatch(/^backend: wasm \(auto: .+\)$/);
      expect(stderr).not.toMatch(/XDG_RUNTIME_DIR|Vulkan|Dawn/);
    }
    expect(stdout).toMatch(/^step 1\/1 .* val Bandit \d\.\d\d BanditTest \d\.\d\d /m);
  });
});
