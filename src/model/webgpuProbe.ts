// Which tfjs backend the CLI should use, decided quietly. Loading Dawn in the CLI's own process prints the Vulkan
// loader's and Dawn's complaints straight to stderr on a machine without a GPU ("error: XDG_RUNTIME_DIR is
// invalid", "Warning: Vulkan shaderUniform*ArrayDynamicIndexing required"), which a newcomer reads as a failure, and
// native code's stderr cannot be silenced from JavaScript. So for 'auto' Dawn is first asked for an adapter in a
// short-lived child process whose output is kept away from the terminal; only a real GPU adapter makes the CLI load
// Dawn itself. Then one line says which backend was chosen and why.
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import {
  describeAdapterFacts,
  initBackend,
  isSoftwareAdapter,
  softwareAdapterReason,
  type AdapterFacts,
  type BackendChoice,
  type BackendInfo,
} from './backend';

/** What the child process found. */
export type WebgpuProbe =
  { kind: 'gpu'; adapter: string } | { kind: 'software'; adapter: string } | { kind: 'none'; reason: string };

/** The child's program: create Dawn, ask for an adapter, print its facts as one JSON line, exit. */
const PROBE_SCRIPT = `
const [webgpuUrl, flags] = process.argv.slice(1);
try {
  const { create, globals } = await import(webgpuUrl);
  Object.assign(globalThis, globals);
  const adapter = await create(JSON.parse(flags)).requestAdapter();
  // GPUAdapterInfo's fields are getters on its prototype: read them one by one (a spread copies nothing).
  const i = adapter ? adapter.info ?? {} : null;
  const facts = i ? { vendor: i.vendor, architecture: i.architecture, device: i.device, description: i.description,
    isFallbackAdapter: i.isFallbackAdapter ?? adapter.isFallbackAdapter } : null;
  process.stdout.write(JSON.stringify({ adapter: facts }) + '\\n');
} catch (err) {
  process.stdout.write(JSON.stringify({ error: String(err && err.message || err) }) + '\\n');
}
process.exit(0);
`;

/** How long the probe may take (Dawn enumerates Vulkan devices in well under a second; a hung driver must not stall). */
const PROBE_TIMEOUT_MS = 20_000;

/** Asks Dawn for an adapter in a child process, with its stderr kept out of the terminal. */
export function probeWebgpu(dawnFlags: string[] = [], timeoutMs = PROBE_TIMEOUT_MS): Promise<WebgpuProbe> {
  let webgpuUrl: string;
  try {
    webgpuUrl = pathToFileURL(createRequire(import.meta.url).resolve('webgpu')).href;
  } catch {
    return Promise.resolve({ kind: 'none', reason: "the 'webgpu' package (Dawn for Node) is not installed" });
  }
  return new Promise((resolve) => {
    const child = spawn(
      process.execPath,
      ['--input-type=module', '-e', PROBE_SCRIPT, webgpuUrl, JSON.stringify(dawnFlags)],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      resolve({ kind: 'none', reason: `Dawn did not answer within ${timeoutMs / 1000} s` });
    }, timeoutMs);
    child.on('close', () => {
      clearTimeout(timer);
      resolve(readProbeOutput(out, err));
    });
  });
}

/** The probe's verdict from the child's stdout (one JSON line) and stderr (only quoted when nothing else explains). */
export function readProbeOutput(stdout: string, stderr: string): WebgpuProbe {
  const line = stdout.trim().split('\n').pop() ?? '';
  let parsed: { adapter?: AdapterFacts | null; error?: string };
  try {
    parsed = JSON.parse(line) as typeof parsed;
  } catch {
    const detail = stderr.trim().split('\n')[0];
    return { kind: 'none', reason: `the WebGPU probe crashed${detail ? ` (${detail})` : ''}` };
  }
  if (parsed.error) return { kind: 'none', reason: `Dawn could not start: ${parsed.error}` };
  if (!parsed.adapter) return { kind: 'none', reason: 'no GPU adapter found (Dawn needs a Vulkan driver for a GPU)' };
  const adapter = describeAdapterFacts(parsed.adapter);
  return isSoftwareAdapter(parsed.adapter) ? { kind: 'software', adapter } : { kind: 'gpu', adapter };
}

/**
 * Starts the backend for `choice` and prints ONE line saying which one and why. 'auto' probes Dawn quietly first
 * (see above); an explicit choice is started directly and fails loudly if it cannot start.
 */
export async function chooseCliBackend(
  choice: BackendChoice,
  print: (line: string) => void,
  opts: { dawnFlags?: string[]; probe?: () => Promise<WebgpuProbe> } = {},
): Promise<BackendInfo> {
  if (choice !== 'auto') {
    const info = await initBackend(choice, { dawnFlags: opts.dawnFlags });
    print(
      `backend: ${info.name}${info.name === 'webgpu' ? ` on ${info.adapter}` : ''} (asked for with --backend ${choice})`,
    );
    return info;
  }
  const probe = await (opts.probe ?? (() => probeWebgpu(opts.dawnFlags)))();
  const skipWebgpu =
    probe.kind === 'none' ? probe.reason : probe.kind === 'software' ? softwareAdapterReason(probe.adapter) : undefined;
  const info = await initBackend('auto', { dawnFlags: opts.dawnFlags, skipWebgpu });
  if (info.name === 'webgpu') print(`backend: webgpu on ${info.adapter} (auto: a GPU adapter was found)`);
  else {
    const why = info.fallbackReasons.map((r) => r.replace(/^webgpu (skipped|unavailable): /, '')).join('; ');
    print(
      `backend: ${info.name} (auto: ${why}; ${info.name === 'wasm' ? 'wasm is the fastest CPU backend' : 'the slowest, reference backend'})`,
    );
  }
  return info;
}
