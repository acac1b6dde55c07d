// How the e2e tests launch Chromium: Debian's own build (apt-get install chromium), never a Playwright download.

export const CHROMIUM_PATH = '/usr/bin/chromium';

/** Chromium flags for every e2e test (specs may drop `--enable-unsafe-webgpu` to test the fallback). */
export const CHROMIUM_ARGS: readonly string[] = [
  '--no-sandbox',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-quic',
  // The one flag WebGPU needs headless (the adapter is then SwiftShader). No `--enable-features=...`: Chromium
  // keeps only the last such flag and it would override Playwright's own.
  '--enable-unsafe-webgpu',
  // As in the unit tests (vitest.config.ts): Dawn skips its zero-fill of workgroup memory, so SwiftShader compiles
  // each kernel several times faster, and a kernel that reads workgroup memory it never wrote is not saved by zeros.
  '--enable-dawn-features=disable_workgroup_init',
];
