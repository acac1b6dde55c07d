// Issue #2's browser proof: the built page starts the trainer worker, the worker gets the requested tfjs backend,
// and that backend multiplies matrices correctly. Test titles are "<area>: <behaviour>" and files are named by
// area (backend*.spec.ts, later training.spec.ts, rollouts.spec.ts, ...), so the report groups by area.
import { expect, test } from '@playwright/test';
import { expectWorkingMatmul, saveScreenshot, watchErrors } from './helpers';

test('backend: auto picks webgpu and its matmul is correct', async ({ page }, testInfo) => {
  const errors = watchErrors(page);
  await page.goto('./');
  await expect(page.getByTestId('backend'), `page errors: ${errors.join(' | ')}`).toHaveText('webgpu');
  // webgpu came up first, so nothing was skipped.
  await expect(page.getByTestId('backend-fallback')).toHaveCount(0);
  await expectWorkingMatmul(page);
  await expect(page.getByTestId('error')).toHaveCount(0);
  await saveScreenshot(page, testInfo, 'backend-auto-webgpu');
});

test('backend: ?backend=wasm gives wasm and its matmul is correct', async ({ page }, testInfo) => {
  const errors = watchErrors(page);
  await page.goto('./?backend=wasm');
  await expect(page.getByTestId('backend'), `page errors: ${errors.join(' | ')}`).toHaveText('wasm');
  await expectWorkingMatmul(page);
  await expect(page.getByTestId('error')).toHaveCount(0);
  await saveScreenshot(page, testInfo, 'backend-wasm');
});

test('backend: an unknown ?backend= value is reported by name', async ({ page }) => {
  await page.goto('./?backend=metal');
  await expect(page.getByTestId('error')).toContainText("unknown backend 'metal'");
  await expect(page.getByTestId('backend')).toHaveText('');
});
