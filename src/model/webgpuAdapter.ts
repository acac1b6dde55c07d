// What the active WebGPU adapter offers, for `ragen bench --json`: which of shader-f16, subgroups, Dawn's
// experimental subgroup matrices (cooperative matrices / tensor cores on Vulkan) and which buffer sizes a faster
// matmul could use on this GPU. Read from navigator.gpu, which initBackend('webgpu') installs in Node (Dawn).

/** An adapter's identity, its optional features (sorted) and every limit it reports. */
export interface WebgpuAdapterCapabilities {
  vendor?: string;
  architecture?: string;
  device?: string;
  description?: string;
  isFallbackAdapter?: boolean;
  subgroupMinSize?: number;
  subgroupMaxSize?: number;
  features: string[];
  limits: Record<string, number>;
}

type AdapterLike = {
  features: Iterable<string>;
  limits: Record<string, number>;
  info?: Record<string, unknown>;
  isFallbackAdapter?: boolean;
};

/** The capabilities of the adapter navigator.gpu hands out now, or null without WebGPU or an adapter. */
export async function webgpuAdapterCapabilities(): Promise<WebgpuAdapterCapabilities | null> {
  const gpu = (globalThis as unknown as { navigator?: { gpu?: { requestAdapter(): Promise<unknown> } } }).navigator
    ?.gpu;
  if (!gpu) return null;
  const adapter = (await gpu.requestAdapter()) as AdapterLike | null;
  if (!adapter) return null;
  // GPUSupportedLimits and GPUAdapterInfo expose their fields as getters on the prototype: for-in reaches them, a
  // spread or Object.keys would not.
  const limits: Record<string, number> = {};
  for (const key in adapter.limits) {
    const value = adapter.limits[key];
    if (typeof value === 'number') limits[key] = value;
  }
  const info = adapter.info ?? {};
  const pick = <T>(key: string, type: string) => (typeof info[key] === type ? (info[key] as T) : undefined);
  return {
    vendor: pick<string>('vendor', 'string'),
    architecture: pick<string>('architecture', 'string'),
    device: pick<string>('device', 'string'),
    description: pick<string>('description', 'string'),
    isFallbackAdapter: pick<boolean>('isFallbackAdapter', 'boolean') ?? adapter.isFallbackAdapter,
    subgroupMinSize: pick<number>('subgroupMinSize', 'number'),
    subgroupMaxSize: pick<number>('subgroupMaxSize', 'number'),
    features: [...adapter.features].sort(),
    limits,
  };
}

/** The features a faster matmul would look for, as one line: 'shader-f16 no, subgroups yes, ...'. */
export function describeMatmulFeatures(c: WebgpuAdapterCapabilities): string {
  const wanted = ['shader-f16', 'subgroups', 'chromium-experimental-subgroup-matrix', 'timestamp-query'];
  const has = wanted.map((f) => `${f} ${c.features.includes(f) ? 'yes' : 'no'}`);
  const buffer = c.limits.maxStorageBufferBindingSize;
  return (
    `${has.join(', ')}; subgroup size ${c.subgroupMinSize ?? '?'}-${c.subgroupMaxSize ?? '?'}; ` +
    `max storage buffer binding ${buffer !== undefined ? `${(buffer / 1024 ** 2).toFixed(0)} MiB` : '?'}`
  );
}
