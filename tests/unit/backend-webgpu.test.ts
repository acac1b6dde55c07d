// WebGPU in Node through Dawn (the `webgpu` package). On machines without a GPU (CI, dev boxes) the Vulkan driver is
// Chromium's SwiftShader, from Debian's chromium package; CI installs chromium + libvulkan1, so this never skips.
// Its own file because tfjs keeps one engine per process and vitest forks per file.
import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { SWIFTSHADER_ICD } from '../../src/model/backend';

describe('initBackend(webgpu) through Dawn', () => {
  it('starts webgpu and multiplies matrices like the plain-JS reference', async () => {
    // A GPU server may already point the loader at its driver; otherwise use the software one.
    if (!process.env.VK_ICD_FILENAMES && !process.env.VK_DRIVER_FILES) {
      if (!existsSync(SWIFTSHADER_ICD)) {
        throw new Error(
          `no Vulkan driver for Dawn: ${SWIFTSHADER_ICD} is missing (apt-get install chromium libvulkan1)`,
        );
      }
      process.env.VK_ICD_FILENAMES = SWIFTSHADER_ICD;
    }
    // Import after the environment is set: Dawn reads it when the first adapter is requested.
    const { initBackend } = await import('../../src/model/backend');
    const { runMatmulCheck } = await import('../../workers/matmul-check');
    const tf = await import('@tensorflow/tfjs');

    const info = await initBackend('webgpu', { dawnFlags: ['backend=vulkan'] });
    expect(info.name).toBe('webgpu');
    expect(tf.getBackend()).toBe('webgpu');
    expect(info.adapter.length).toBeGreaterThan(0);
    // Small ops must really run on the GPU, not be forwarded to the CPU, or this test proves nothing about webgpu.
    expect(tf.env().getBool('WEBGPU_CPU_FORWARD')).toBe(false);

    const before = tf.memory().numTensors;
    const result = await runMatmulCheck(64);
    expect(result.backend).toBe('webgpu');
    expect(result.maxAbsError).toBeLessThan(1e-4);
    expect(tf.memory().numTensors).toBe(before);
  });
});

describe('RAGEN_DAWN_FLAGS', () => {
  it('adds Dawn flags from the environment, separated by spaces', async () => {
    const { dawnFlagsFromEnv } = await import('../../src/model/backend');
    expect(dawnFlagsFromEnv({ RAGEN_DAWN_FLAGS: ' enable-dawn-features=a,b  backend=vulkan ' })).toEqual([
      'enable-dawn-features=a,b',
      'backend=vulkan',
    ]);
    expect(dawnFlagsFromEnv({})).toEqual([]);
    // The suite runs with the flag that skips the zero-fill of workgroup memory, unless told otherwise (vitest.config.ts).
    if (process.env.RAGEN_DAWN_FLAGS === 'enable-dawn-features=disable_workgroup_init') {
      expect(dawnFlagsFromEnv()).toEqual(['enable-dawn-features=disable_workgroup_init']);
    }
  });
});
