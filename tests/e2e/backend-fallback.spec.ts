// The page on a browser without a usable GPU: headless Chromium without --enable-unsafe-webgpu has navigator.gpu
// but requestAdapter() returns null, which is what a machine without WebGPU support looks like to tfjs.
import { expect, test } from '@playwright/test';
import { CHROMIUM_ARGS, CHROMIUM_PATH } from './chromium';
import { expectWorkingMatmul, saveScreenshot, watchErrors } from './helpers';

test.use({
  launchOptions: {
    executablePath: CHROMIUM_PATH,
    args: CHROMIUM_ARGS.filter((arg) => arg !== '--enable-unsafe-webgpu'),
  },
});

test('backend: without WebGPU, auto falls back to wasm and says why on the page', async ({ page }, testInfo) => {
  const errors = watchErrors(page);
  await page.goto('./');
  await expect(page.getByTestId('backend'), `page errors: ${errors.join(' | ')}`).toHaveText('wasm');
  await expect(page.getByTestId('backend-fallback')).toContainText('webgpu unavailable');
  await expectWorkingMatmul(page);
  await saveScreenshot(page, testInfo, 'backend-auto-fallback-wasm');
});

test('backend: without WebGPU, an explicit ?backend=webgpu fails loudly instead of falling back', async ({ page }) => {
  await page.goto('./?backend=webgpu');
  await expect(page.getByTestId('error')).toContainText('could not start the requested backend: webgpu unavailable');
  await expect(page.getByTestId('backend')).toHaveText('');
});
