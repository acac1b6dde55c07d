// The device tfjs's webgpu backend runs on is ours (src/model/webgpuDevice.ts): requested with the optional features
// our own pipelines use where the adapter offers them. On SwiftShader (VK_ICD_FILENAMES set to it unless already set)
// that is `subgroups` and `timestamp-query`, not `shader-f16` or subgroup matrices; adapters that lack features or
// refuse them are stand-ins.
import * as tf from '@tensorflow/tfjs';
import { beforeAll, describe, expect, it } from 'vitest';
import { initBackend, SWIFTSHADER_ICD, withUnsafeApis } from '../../../src/model/backend';
import {
  deviceFeatureRequest,
  requestFeaturedDevice,
  webgpuDeviceFacts,
  webgpuDeviceFeatures,
} from '../../../src/model/webgpuDevice';
import { webgpuAdapterCapabilities } from '../../../src/model/webgpuAdapter';

beforeAll(async () => {
  process.env.VK_ICD_FILENAMES ??= SWIFTSHADER_ICD;
  await initBackend('webgpu');
}, 120_000);

describe('the webgpu backend device', () => {
  it('has every wanted feature the adapter offers, and tfjs runs on that device', async () => {
    const adapter = (await webgpuAdapterCapabilities())!;
    const features = webgpuDeviceFeatures()!;
    const wanted = deviceFeatureRequest(adapter.features);
    expect(wanted).toContain('subgroups');
    for (const f of wanted) expect(features).toContain(f);
    expect(features).not.toContain('shader-f16'); // SwiftShader offers none: nothing is asked that is not offered
    const device = (tf.backend() as unknown as { device: { features: Iterable<string> } }).device;
    expect([...device.features].sort()).toEqual(features);
    expect(webgpuDeviceFacts()!.refused).toEqual([]);
    expect(webgpuDeviceFacts()!.subgroupMaxSize).toBeGreaterThan(0);
    const x = tf.tensor1d([1, 2, 3]);
    expect(Array.from(await x.square().data())).toEqual([1, 4, 9]); // and tfjs's kernels still run on it
    x.dispose();
  });

  it('asks only for offered features, and falls back to tfjs’s own when the device is refused', async () => {
    expect(deviceFeatureRequest(['texture-compression-bc', 'shader-f16', 'timestamp-query'])).toEqual([
      'timestamp-query',
      'shader-f16',
    ]);
    expect(deviceFeatureRequest([])).toEqual([]);
    const asked: string[][] = [];
    const adapter = {
      features: new Set(['timestamp-query', 'subgroups', 'chromium-experimental-subgroup-matrix']),
      limits: { maxBufferSize: 1024 } as Record<string, number>,
      info: {
        subgroupMinSize: 32,
        subgroupMaxSize: 32,
        subgroupMatrixConfigs: [{ componentType: 'f16', resultComponentType: 'f32', M: 16, N: 16, K: 16 }],
      },
      requestDevice: async (d: { requiredFeatures: string[] }) => {
        asked.push(d.requiredFeatures);
        if (d.requiredFeatures.includes('chromium-experimental-subgroup-matrix')) throw new Error('refused');
        return { features: new Set(d.requiredFeatures) };
      },
    };
    const got = await requestFeaturedDevice(adapter);
    // Subgroup matrices dropped first; subgroups kept.
    expect(asked).toEqual([
      ['timestamp-query', 'subgroups', 'chromium-experimental-subgroup-matrix'],
      ['timestamp-query', 'subgroups'],
    ]);
    expect(got.facts.features).toEqual(['subgroups', 'timestamp-query']);
    expect(got.facts.refused).toEqual(['chromium-experimental-subgroup-matrix']);
    expect(got.facts.subgroupMatrixConfigs).toEqual([
      { componentType: 'f16', resultComponentType: 'f32', M: 16, N: 16, K: 16 },
    ]);
    // An adapter that refuses every extra feature still gives tfjs its device; one that refuses even tfjs's fails.
    const stubborn = {
      ...adapter,
      requestDevice: async (d: { requiredFeatures: string[] }) => {
        if (d.requiredFeatures.some((f) => f !== 'timestamp-query')) throw new Error('refused');
        return { features: new Set(d.requiredFeatures) };
      },
    };
    const least = await requestFeaturedDevice(stubborn);
    expect(least.facts.refused).toEqual(['chromium-experimental-subgroup-matrix', 'subgroups']);
    expect(least.facts.features).toEqual(['timestamp-query']);
    const none = {
      ...adapter,
      requestDevice: async () => {
        throw new Error('no device');
      },
    };
    await expect(requestFeaturedDevice(none)).rejects.toThrow('no device');
  });

  it("turns on Dawn's allow_unsafe_apis in the one list of toggles", () => {
    expect(withUnsafeApis([])).toEqual(['enable-dawn-features=allow_unsafe_apis']);
    expect(withUnsafeApis(['backend=vulkan', 'enable-dawn-features=disable_workgroup_init,allow_unsafe_apis'])).toEqual(
      ['backend=vulkan', 'enable-dawn-features=allow_unsafe_apis,disable_workgroup_init'],
    );
  });
});
