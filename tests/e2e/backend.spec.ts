// Issue #2's browser proof, with issue #18's honest default: the built page starts the trainer worker, the worker
// gets the requested tfjs backend, and that backend multiplies matrices correctly. Headless Chromium's only WebGPU
// adapter is SwiftShader, a software renderer 5-50x slower than wasm: 'auto' must pass over it for wasm and say why,
// while an explicit webgpu still gets it. Test titles are "<area>: <behaviour>" and files are named by area.
import { expect, test } from '@playwright/test';
import { expectWorkingMatmul, saveScreenshot, watchErrors } from './helpers';

test('backend: auto passes over the software WebGPU adapter (SwiftShader) for wasm, and says why', async ({
  page,
}, testInfo) => {
  const errors = watchErrors(page);
  await page.goto('./');
  await expect(page.getByTestId('backend'), `page errors: ${errors.join(' | ')}`).toHaveText('wasm');
  await expect(page.getByTestId('backend-select')).toHaveValue('auto');
  const why = page.getByTestId('backend-fallback');
  await expect(why).toContainText('auto chose wasm');
  await expect(why).toContainText('webgpu skipped: the only WebGPU adapter is a software renderer');
  await expect(why).toContainText(/swiftshader/i);
  await expectWorkingMatmul(page);
  await expect(page.getByTestId('error')).toHaveCount(0);
  await saveScreenshot(page, testInfo, 'backend-auto-skips-swiftshader');
});

test('backend: the backend-select restarts the worker on webgpu, wasm or cpu and writes the URL', async ({
  page,
}, testInfo) => {
  const errors = watchErrors(page);
  await page.goto('./');
  await expect(page.getByTestId('backend')).toHaveText('wasm');
  for (const choice of ['webgpu', 'cpu', 'wasm'] as const) {
    await page.getByTestId('backend-select').selectOption(choice);
    await expect(page.getByTestId('backend'), `page errors: ${errors.join(' | ')}`).toHaveText(choice);
    await expectWorkingMatmul(page);
    expect(new URL(page.url()).searchParams.get('backend')).toBe(choice);
    await expect(page.getByTestId('backend-fallback')).toHaveCount(0);
  }
  // The explicit webgpu request got the software adapter it asked for (no silent fallback).
  await page.getByTestId('backend-select').selectOption('webgpu');
  await expect(page.getByTestId('backend')).toHaveText('webgpu');
  await expect(page.getByText(/swiftshader/i).first()).toBeVisible();
  await saveScreenshot(page, testInfo, 'backend-webgpu-selected');
  // A reload keeps the choice (it is in the URL).
  await page.reload();
  await expect(page.getByTestId('backend-select')).toHaveValue('webgpu');
  await expect(page.getByTestId('backend')).toHaveText('webgpu');
});

test('backend: ?backend=wasm gives wasm and its matmul is correct', async ({ page }, testInfo) => {
  const errors = watchErrors(page);
  await page.goto('./?backend=wasm');
  await expect(page.getByTestId('backend'), `page errors: ${errors.join(' | ')}`).toHaveText('wasm');
  await expectWorkingMatmul(page);
  await expect(page.getByTestId('error')).toHaveCount(0);
  await saveScreenshot(page, testInfo, 'backend-wasm');
});

test('backend: an unknown ?backend= value is reported on the backend field, and the page starts with auto', async ({
  page,
}) => {
  await page.goto('./?backend=metal');
  await expect(page.getByTestId('error-backend')).toContainText("unknown backend 'metal'");
  await expect(page.getByTestId('backend-select')).toHaveAttribute('aria-invalid', 'true');
  await expect(page.getByTestId('backend')).toHaveText('wasm');
  // Picking a backend fixes it in place.
  await page.getByTestId('backend-select').selectOption('cpu');
  await expect(page.getByTestId('error-backend')).toHaveCount(0);
  await expect(page.getByTestId('backend')).toHaveText('cpu');
  expect(new URL(page.url()).searchParams.get('backend')).toBe('cpu');
});
