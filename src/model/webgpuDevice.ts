// The GPUDevice tfjs's webgpu backend runs on, requested by us with the optional features our own pipelines use
// (kernels/webgpuOwnProgram.ts): `shader-f16` (f16 types in WGSL), `subgroups` (subgroupAdd and friends) and Dawn's
// `chromium-experimental-subgroup-matrix` (cooperative matrices: tensor cores on NVIDIA through Vulkan), each only
// where the adapter offers it, plus what tfjs itself asks for (`timestamp-query`, `bgra8unorm-storage`) and the same
// limits. tfjs-backend-webgpu's own factory asks only for the features tfjs uses, so this one replaces it
// (`registerWebgpuBackendWithFeatures`, called by initBackend before tf.setBackend('webgpu')) and hands the device to
// tfjs's WebGPUBackend, whose constructor takes a device and the adapter's info. tfjs's kernels are unchanged: a
// device with more features runs every pipeline a device with fewer does.
//
// Dawn lists `chromium-experimental-subgroup-matrix` only with its `allow_unsafe_apis` toggle on (in Node:
// create(['enable-dawn-features=allow_unsafe_apis']), which backend.ts passes; Chromium: the same command-line flag).
// When the adapter refuses a device with the extra features, the factory asks again without them, the most
// experimental first (subgroup matrices, then subgroups, then shader-f16), down to tfjs's own list, so a feature's
// absence never stops the backend.
import * as tf from '@tensorflow/tfjs';

/** The optional features our own pipelines use, requested where the adapter offers them. */
export const OWN_PIPELINE_FEATURES = ['shader-f16', 'subgroups', 'chromium-experimental-subgroup-matrix'] as const;
/** The optional features tfjs-backend-webgpu itself requests where offered (base.js). */
const TFJS_FEATURES = ['timestamp-query', 'bgra8unorm-storage'];

/** One shape of subgroup matrix the adapter can multiply (GPUAdapterInfo.subgroupMatrixConfigs). */
export interface SubgroupMatrixConfig {
  componentType: string;
  resultComponentType: string;
  M: number;
  N: number;
  K: number;
}

/** What the device tfjs runs on got: its features (sorted), and the adapter's subgroup facts our shaders need. */
export interface WebgpuDeviceFacts {
  features: string[];
  /** The features asked for but refused by requestDevice (the device then has tfjs's own features only). */
  refused: string[];
  subgroupMinSize?: number;
  subgroupMaxSize?: number;
  subgroupMatrixConfigs: SubgroupMatrixConfig[];
  /** The device's maxComputeInvocationsPerWorkgroup (what a subgroup-matrix workgroup may hold). */
  maxInvocationsPerWorkgroup?: number;
}

let facts: WebgpuDeviceFacts | null = null;

/** The features of the device the webgpu backend runs on (sorted), or null before the backend started here. */
export function webgpuDeviceFeatures(): string[] | null {
  return facts ? [...facts.features] : null;
}

/** Everything recorded about the webgpu backend's device, or null before the backend started here. */
export function webgpuDeviceFacts(): WebgpuDeviceFacts | null {
  return facts;
}

/** Whether the webgpu backend's device has `feature`. */
export function webgpuDeviceHas(feature: string): boolean {
  return facts?.features.includes(feature) ?? false;
}

/** The features to request from an adapter offering `offered`: tfjs's and ours, those it offers, in a fixed order. */
export function deviceFeatureRequest(offered: Iterable<string>): string[] {
  const has = new Set(offered);
  return [...TFJS_FEATURES, ...OWN_PIPELINE_FEATURES].filter((f) => has.has(f));
}

type AdapterLike = {
  features: ReadonlySet<string>;
  limits: Record<string, number>;
  info?: Record<string, unknown>;
  requestDevice(descriptor: { requiredFeatures: string[]; requiredLimits: Record<string, number> }): Promise<unknown>;
};

/** The limits tfjs asks for: the adapter's own, so that large models' buffers fit (base.js). */
const TFJS_LIMITS = [
  'maxComputeWorkgroupStorageSize',
  'maxComputeWorkgroupsPerDimension',
  'maxStorageBufferBindingSize',
  'maxBufferSize',
  'maxComputeWorkgroupSizeX',
  'maxComputeInvocationsPerWorkgroup',
];

/**
 * A device from `adapter` with deviceFeatureRequest's features (or, refused, with fewer: see the top of this file),
 * and the facts about it. Exported for the tests, which hand it adapters that lack or refuse features.
 */
export async function requestFeaturedDevice(
  adapter: AdapterLike,
): Promise<{ device: unknown; facts: WebgpuDeviceFacts }> {
  const requiredLimits: Record<string, number> = {};
  for (const name of TFJS_LIMITS) requiredLimits[name] = adapter.limits[name];
  const wanted = deviceFeatureRequest(adapter.features);
  const ours = wanted.filter((f) => !TFJS_FEATURES.includes(f));
  let device: unknown;
  const refused: string[] = [];
  for (;;) {
    try {
      device = await adapter.requestDevice({
        requiredFeatures: wanted.filter((f) => !refused.includes(f)),
        requiredLimits,
      });
      break;
    } catch (err) {
      const next = ours[ours.length - 1 - refused.length];
      if (next === undefined) throw err; // refused with tfjs's own features: as tfjs would fail
      refused.push(next);
    }
  }
  const info = adapter.info ?? {};
  const num = (k: string) => (typeof info[k] === 'number' ? (info[k] as number) : undefined);
  const configs = Array.isArray(info.subgroupMatrixConfigs)
    ? (info.subgroupMatrixConfigs as SubgroupMatrixConfig[])
    : [];
  return {
    device,
    facts: {
      features: [...(device as { features: Iterable<string> }).features].sort(),
      refused,
      subgroupMinSize: num('subgroupMinSize'),
      subgroupMaxSize: num('subgroupMaxSize'),
      maxInvocationsPerWorkgroup: (device as { limits?: { maxComputeInvocationsPerWorkgroup?: number } }).limits
        ?.maxComputeInvocationsPerWorkgroup,
      // GPUSubgroupMatrixConfig's fields are getters: copied one by one.
      subgroupMatrixConfigs: configs.map((c) => ({
        componentType: c.componentType,
        resultComponentType: c.resultComponentType,
        M: c.M,
        N: c.N,
        K: c.K,
      })),
    },
  };
}

/**
 * Replaces tfjs-backend-webgpu's backend factory with one whose device has the optional features above (call after
 * importing '@tensorflow/tfjs-backend-webgpu' and before tf.setBackend('webgpu')). Idempotent while the backend is
 * not yet started; a started backend keeps its device.
 */
export async function registerWebgpuBackendWithFeatures(): Promise<void> {
  const { WebGPUBackend } = await import('@tensorflow/tfjs-backend-webgpu');
  if (tf.engine().registry.webgpu) return; // already started: its device stays
  if (tf.findBackendFactory('webgpu')) tf.removeBackend('webgpu');
  tf.registerBackend(
    'webgpu',
    async () => {
      const gpu = (globalThis as unknown as { navigator: { gpu: { requestAdapter(o: object): Promise<unknown> } } })
        .navigator.gpu;
      const powerPreference = tf.env().get('WEBGPU_USE_LOW_POWER_GPU') ? 'low-power' : 'high-performance';
      const adapter = (await gpu.requestAdapter({ powerPreference })) as AdapterLike | null;
      if (!adapter) throw new Error('WebGPU has no adapter (requestAdapter() returned null)');
      const got = await requestFeaturedDevice(adapter);
      facts = got.facts;
      return new WebGPUBackend(got.device as GPUDevice, adapter.info as unknown as GPUAdapterInfo);
    },
    3, // tfjs's priority for webgpu
  );
}
