// End-to-end tests in real headless Chromium (Debian's /usr/bin/chromium; never `npx playwright install`).
// They run against the BUILT site (`vite build` + `vite preview`), so a passing run also proves the static build.
import { defineConfig } from '@playwright/test';
import { CHROMIUM_ARGS, CHROMIUM_PATH } from './tests/e2e/chromium';

/** Port of the preview server (strict: a busy port fails fast instead of testing some other server); PLAYWRIGHT_PORT
 * moves it when another checkout on the same machine is running its own e2e tests. */
const PORT = Number(process.env.PLAYWRIGHT_PORT ?? 4321);

export default defineConfig({
  testDir: 'tests/e2e',
  testMatch: '**/*.spec.ts',
  outputDir: 'test-results',
  // Page and worker share one SwiftShader GPU emulation on a small CPU: run one test at a time.
  workers: 1,
  fullyParallel: false,
  timeout: 60_000,
  expect: { timeout: 30_000 },
  retries: 0,
  forbidOnly: !!process.env.CI,
  // The JSON report feeds scripts/test-summary.mjs, which prints the suite's one-line total after `npm test`.
  reporter: [
    ['list'],
    ['json', { outputFile: 'reports/playwright.json' }],
    ...(process.env.CI ? [['html', { open: 'never', outputFolder: 'reports/playwright-html' }] as const] : []),
  ],
  use: {
    baseURL: `http://127.0.0.1:${PORT}/`,
    browserName: 'chromium',
    headless: true,
    launchOptions: {
      executablePath: CHROMIUM_PATH,
      args: [...CHROMIUM_ARGS],
    },
    trace: 'retain-on-failure',
  },
  webServer: {
    // `exec` makes the preview server the shell itself, so Playwright's shutdown signal reaches the real vite
    // process (not a wrapper) and no server is left behind after the run.
    command: `node node_modules/vite/bin/vite.js build --logLevel warn && exec node node_modules/vite/bin/vite.js preview --host 127.0.0.1 --port ${PORT} --strictPort`,
    url: `http://127.0.0.1:${PORT}/`,
    reuseExistingServer: false,
    timeout: 120_000,
    stdout: 'ignore',
    stderr: 'pipe',
  },
});
