// The WebGPU adapter's identity, features and limits as `ragen bench --json` records them (field "adapter"), read
// from Dawn in Node on SwiftShader here; on a GPU server the same call reports e.g. shader-f16 and subgroup matrices.
import { beforeAll, describe, expect, it } from 'vitest';
import { initBackend, SWIFTSHADER_ICD } from '../../../src/model/backend';
import { describeMatmulFeatures, webgpuAdapterCapabilities } from '../../../src/model/webgpuAdapter';

beforeAll(async () => {
  process.env.VK_ICD_FILENAMES ??= SWIFTSHADER_ICD;
  await initBackend('webgpu');
}, 120_000);

describe('webgpuAdapterCapabilities', () => {
  it('lists the adapter, its sorted features and every numeric limit', async () => {
    const c = (await webgpuAdapterCapabilities())!;
    expect(c.description).toMatch(/SwiftShader/i);
    expect(c.isFallbackAdapter).toBe(true);
    expect(c.features).toContain('subgroups');
    expect(c.features).toEqual([...c.features].sort());
    expect(c.limits.maxStorageBufferBindingSize).toBeGreaterThan(0);
    expect(c.limits.maxComputeWorkgroupSizeX).toBeGreaterThanOrEqual(256);
    expect(Object.keys(c.limits).length).toBeGreaterThan(20);
    expect(describeMatmulFeatures(c)).toMatch(
      /^shader-f16 (yes|no), subgroups yes, chromium-experimental-subgroup-matrix (yes|no), timestamp-query (yes|no); subgroup size \d+-\d+; max storage buffer binding \d+ MiB$/,
    );
  });
});
