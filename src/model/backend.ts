// Picks and initialises the tfjs backend, in the browser (page or worker) and in Node (Dawn for WebGPU).
//
// Why this is more than `tf.setBackend(name)`:
// - the WebGPU backend registers itself only if `navigator.gpu` exists when its module is evaluated, so in Node the
//   Dawn globals must be installed first and the backend module imported afterwards (dynamically);
// - `tf.setBackend` returns false on failure while `tf.getBackend()` may still name the failed backend, so the
//   result is checked and a requested backend that did not come up is an error, never a silent fallback;
// - 'auto' tries webgpu, then wasm, then cpu, and says which one it got and why the better ones failed. A WebGPU
//   adapter that is a software renderer (SwiftShader, llvmpipe: `isFallbackAdapter`) counts as unusable for 'auto':
//   it runs the same shaders on the CPU 5-50x slower than wasm (PLATFORM.md), so 'auto' skips it and says so.
import * as tf from '@tensorflow/tfjs';
import { registerFusedKernels } from './kernels/index';
import { defaultWebGpuMatMul, HALF_MATMULS, setWebGpuMatMul } from './webgpuMatMulRoute';
import { selfCheckMatMulMode } from './webgpuSelfCheck';
import { installWasmTransposedMatMul } from './wasmMatMul';
import { installWasmSlice } from './wasmSlice';
import { registerWebgpuBackendWithFeatures } from './webgpuDevice';

import { BACKEND_NAMES, isBackendName, type BackendChoice, type BackendName } from './backendNames';

export * from './backendNames';

export interface BackendOptions {
  /** Browser only: URLs of the wasm binaries (Vite: `import u from '.../tfjs-backend-wasm-simd.wasm?url'`). */
  wasmPaths?: Partial<
    Record<'tfjs-backend-wasm.wasm' | 'tfjs-backend-wasm-simd.wasm' | 'tfjs-backend-wasm-threaded-simd.wasm', string>
  >;
  /**
   * Node only: flags passed to Dawn's `create()`, e.g. ['backend=vulkan'] or ['adapter=NAME']; RAGEN_DAWN_FLAGS
   * (`dawnFlagsFromEnv`) adds to them.
   */
  dawnFlags?: string[];
  /** Called with a human-readable line when 'auto' falls back or a backend is initialised. */
  log?: (line: string) => void;
  /**
   * 'auto' only: skip webgpu without touching it, for this reason (the CLI probes Dawn in a child process first,
   * so a machine without a usable GPU never loads Dawn, and never prints its driver noise, in the main process).
   */
  skipWebgpu?: string;
}

export interface BackendInfo {
  name: BackendName;
  /** The adapter's description for webgpu (e.g. 'SwiftShader' or an NVIDIA device), else the backend name. */
  adapter: string;
  /** Why better backends were skipped, when 'auto' fell back. */
  fallbackReasons: string[];
  /** True when the backend is webgpu on a software (CPU-emulated) adapter: slower than wasm (softwareAdapterReason). */
  softwareAdapter?: boolean;
}

const isNode =
  typeof process !== 'undefined' &&
  !!process.versions?.node &&
  typeof window === 'undefined' &&
  typeof (globalThis as { WorkerGlobalScope?: unknown }).WorkerGlobalScope === 'undefined';

let adapterDescription = '';
let adapterIsSoftware = false;

/** What a WebGPU adapter says about itself (GPUAdapterInfo, plus the older adapter-level flag). */
export interface AdapterFacts {
  vendor?: string;
  architecture?: string;
  device?: string;
  description?: string;
  isFallbackAdapter?: boolean;
}

/** Software renderers that implement WebGPU on the CPU: slower than tfjs's own wasm kernels. */
const SOFTWARE_ADAPTER = /swiftshader|llvmpipe|lavapipe|softpipe|software|basic render/i;

/** True for a software (CPU-emulated) WebGPU adapter: flagged as a fallback adapter, or named like one. */
export function isSoftwareAdapter(facts: AdapterFacts): boolean {
  if (facts.isFallbackAdapter === true) return true;
  return [facts.vendor, facts.architecture, facts.device, facts.description].some(
    (f) => typeof f === 'string' && SOFTWARE_ADAPTER.test(f),
  );
}

/** One line naming an adapter, e.g. 'google swiftshader SwiftShader driver 5.0.0'. */
export function describeAdapterFacts(facts: AdapterFacts): string {
  return (
    [facts.vendor, facts.architecture, facts.device, facts.description].filter(Boolean).join(' ') || 'unknown adapter'
  );
}

/** The reason 'auto' gives for skipping a software adapter. */
export function softwareAdapterReason(description: string): string {
  return `the only WebGPU adapter is a software renderer (${description}), which runs 5-50x slower than wasm on this CPU`;
}

/**
 * Dawn flags from the environment: RAGEN_DAWN_FLAGS, separated by spaces, e.g.
 * 'enable-dawn-features=disable_workgroup_init'. The unit tests set that one (vitest.config.ts): without Dawn's
 * zero-fill of workgroup memory SwiftShader compiles a kernel about 2.5x faster, and a kernel that reads workgroup
 * memory it never wrote may read leftovers there instead of zeros, so the tests are, if anything, stricter.
 */
export function dawnFlagsFromEnv(env: Record<string, string | undefined> = process.env): string[] {
  return (env.RAGEN_DAWN_FLAGS ?? '').split(/\s+/).filter(Boolean);
}

/**
 * Dawn's flags with the toggle `allow_unsafe_apis` on, merged into one `enable-dawn-features=` list (Dawn keeps one):
 * without it Dawn does not offer `chromium-experimental-subgroup-matrix`, the tensor-core path of our own matmul
 * (webgpuDevice.ts). It unlocks experimental features only; the device still gets those the backend asks for.
 */
export function withUnsafeApis(flags: string[]): string[] {
  const KEY = 'enable-dawn-features=';
  const toggles = flags.filter((f) => f.startsWith(KEY)).flatMap((f) => f.slice(KEY.length).split(','));
  const merged = [...new Set(['allow_unsafe_apis', ...toggles.filter(Boolean)])];
  return [...flags.filter((f) => !f.startsWith(KEY)), KEY + merged.join(',')];
}

/** Installs Dawn's WebGPU implementation as `navigator.gpu` in Node (idempotent). */
async function installDawn(flags: string[]): Promise<void> {
  const g = globalThis as unknown as { navigator?: { gpu?: unknown } };
  if (g.navigator?.gpu) return;
  const dawn = (await import('webgpu')) as unknown as { create: (f: string[]) => unknown; globals: object };
  Object.assign(globalThis, dawn.globals);
  const gpu = dawn.create(flags);
  if (g.navigator) Object.defineProperty(g.navigator, 'gpu', { value: gpu, configurable: true });
  else Object.defineProperty(globalThis, 'navigator', { value: { gpu }, configurable: true, writable: true });
}

async function describeAdapter(): Promise<string> {
  const gpu = (globalThis as unknown as { navigator?: { gpu?: { requestAdapter(): Promise<unknown> } } }).navigator
    ?.gpu;
  if (!gpu) throw new Error('WebGPU is not available here (navigator.gpu is undefined)');
  const adapter = (await gpu.requestAdapter()) as null | { info?: AdapterFacts; isFallbackAdapter?: boolean };
  if (!adapter) {
    const hint = isNode
      ? ' In Node, Dawn needs a Vulkan driver: install libvulkan1 and, on a machine without a GPU, point ' +
        "VK_ICD_FILENAMES at a software driver (e.g. /usr/lib/chromium/vk_swiftshader_icd.json from Debian's chromium)."
      : ' In Chromium, WebGPU needs a GPU or the --enable-unsafe-webgpu flag.';
    throw new Error('WebGPU has no adapter (requestAdapter() returned null).' + hint);
  }
  // GPUAdapterInfo's fields are getters on its prototype (Dawn, Chromium): read them one by one, a spread copies nothing.
  const info = adapter.info ?? {};
  const facts: AdapterFacts = {
    vendor: info.vendor,
    architecture: info.architecture,
    device: info.device,
    description: info.description,
    isFallbackAdapter: info.isFallbackAdapter ?? adapter.isFallbackAdapter,
  };
  adapterIsSoftware = isSoftwareAdapter(facts);
  return describeAdapterFacts(facts);
}

async function tryBackend(name: BackendName, opts: BackendOptions, auto: boolean): Promise<void> {
  if (name === 'webgpu') {
    if (auto && opts.skipWebgpu) throw new SkippedBackend(opts.skipWebgpu);
    if (isNode) await installDawn(withUnsafeApis([...(opts.dawnFlags ?? []), ...dawnFlagsFromEnv()]));
    adapterDescription = await describeAdapter();
    if (auto && adapterIsSoftware) throw new SkippedBackend(softwareAdapterReason(adapterDescription));
    await import('@tensorflow/tfjs-backend-webgpu');
    await registerWebgpuBackendWithFeatures();
    // Without this, tfjs runs small webgpu ops on the CPU, which hides kernel bugs and costs readbacks.
    tf.env().set('WEBGPU_CPU_FORWARD', false);
  } else if (name === 'wasm') {
    const wasm = await import('@tensorflow/tfjs-backend-wasm');
    if (opts.wasmPaths) wasm.setWasmPaths(opts.wasmPaths as Record<string, string>);
    // Threads gave no speed-up on 2 cores, the threaded build hangs in minified cross-origin-isolated workers, and its
    // shared memory does not link with the fused kernels' module (kernels/wasm.ts; tests/unit/model/kernels-wasm-threads).
    tf.env().set('WASM_HAS_MULTITHREAD_SUPPORT', false);
    installWasmTransposedMatMul();
    installWasmSlice();
  }
  if (!tf.findBackendFactory(name)) throw new Error(`the tfjs '${name}' backend is not registered`);
  const ok = await tf.setBackend(name);
  if (!ok) throw new Error(`tf.setBackend('${name}') failed`);
  await tf.ready();
  if (tf.getBackend() !== name) throw new Error(`asked for '${name}' but tfjs is running '${tf.getBackend()}'`);
  await registerFusedKernels();
  if (name === 'webgpu') {
    const matmul = defaultWebGpuMatMul(adapterIsSoftware);
    setWebGpuMatMul(matmul);
    if ((HALF_MATMULS as readonly string[]).includes(matmul)) {
      // An f16 mode is used only once its results agree with exact products within f16's rounding.
      const check = await selfCheckMatMulMode(matmul);
      if (!check.ok) {
        setWebGpuMatMul('tiled');
        opts.log?.(`webgpu matmul: '${matmul}' failed its check against f32 (${check.reason}), so tiled (f32) runs`);
      }
    }
    watchGpuErrors();
  }
}

// WebGPU answers a command it refuses (a binding past the device's 2 GiB limit, say) with an uncaptured error and runs
// nothing for it; tfjs goes on with whatever the output buffer held. On the H100 a paper-size rollout did exactly that
// (BENCHMARKS.md). The errors are kept here, and assertNoGpuError throws where the trainer would use or keep the
// results: a run stops with the device's message instead of training on garbage.
let gpuErrors: string[] = [];
const watchedDevices = new WeakSet<object>();

function watchGpuErrors(): void {
  const device = (tf.backend() as unknown as { device?: EventTarget }).device;
  if (!device || watchedDevices.has(device) || typeof device.addEventListener !== 'function') return;
  watchedDevices.add(device);
  device.addEventListener('uncapturederror', (event) => {
    const message = (event as Event & { error?: { message?: string } }).error?.message ?? 'unknown error';
    if (gpuErrors.length < 8) gpuErrors.push(message);
  });
}

/** Throws (and forgets them) when WebGPU reported errors since the last call; `where` says what was running. */
export function assertNoGpuError(where: string): void {
  if (gpuErrors.length === 0) return;
  const [first, ...more] = gpuErrors;
  gpuErrors = [];
  const text = first
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean)
    .join(' ');
  throw new Error(
    `WebGPU refused a command ${where}, so its results are not trustworthy: ${text}` +
      (more.length ? ` (and ${more.length} more error(s))` : ''),
  );
}

/** 'auto' passed over a backend that works but should not be used here (not a failure). */
class SkippedBackend extends Error {}

/**
 * Initialises `choice` (or the best available backend for 'auto') and returns what is active.
 * Throws, naming the backend and the reason, when an explicitly requested backend cannot start.
 */
export async function initBackend(choice: BackendChoice = 'auto', opts: BackendOptions = {}): Promise<BackendInfo> {
  const log = opts.log ?? (() => {});
  if (choice !== 'auto' && !isBackendName(choice)) {
    throw new Error(`unknown backend '${String(choice)}' (expected one of: auto, ${BACKEND_NAMES.join(', ')})`);
  }
  const candidates: BackendName[] = choice === 'auto' ? [...BACKEND_NAMES] : [choice];
  const fallbackReasons: string[] = [];
  for (const name of candidates) {
    try {
      await tryBackend(name, opts, choice === 'auto');
      const adapter = name === 'webgpu' ? adapterDescription : name;
      if (fallbackReasons.length) log(`backend: using ${name} (${fallbackReasons.join('; ')})`);
      else log(`backend: using ${name}${name === 'webgpu' ? ` on ${adapter}` : ''}`);
      return { name, adapter, fallbackReasons, softwareAdapter: name === 'webgpu' && adapterIsSoftware };
    } catch (err) {
      const reason =
        err instanceof SkippedBackend
          ? `${name} skipped: ${err.message}`
          : `${name} unavailable: ${(err as Error).message}`;
      if (choice !== 'auto') throw new Error(`could not start the requested backend: ${reason}`, { cause: err });
      fallbackReasons.push(reason);
    }
  }
  throw new Error(`no tfjs backend could start: ${fallbackReasons.join('; ')}`);
}

/** Path of Debian chromium's SwiftShader Vulkan driver, the software adapter used for WebGPU tests on CPU machines. */
export const SWIFTSHADER_ICD = '/usr/lib/chromium/vk_swiftshader_icd.json';
