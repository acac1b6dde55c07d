// The lesson on WebGPU (headless Chromium's SwiftShader adapter, asked for explicitly): the page says it trains on
// the graphics card, and the multi-run view and the count in words work there as on wasm. Tiny settings (2 runs
// per arm of 1 step, small batches): SwiftShader compiles every kernel on the CPU.
import { expect, test } from '@playwright/test';
import { watchErrors } from './helpers';

test('lesson-start (webgpu): the page names the backend, trains every run on it, draws each run and counts them', async ({
  page,
}) => {
  test.setTimeout(480_000);
  const errors = watchErrors(page);
  await page.goto('./?lesson&backend=webgpu&steps=1&groups=2&groupSize=2&turns=1&runs=2');
  await expect(page.getByTestId('backend')).toHaveText('webgpu', { timeout: 120_000 });
  await expect(page.getByTestId('lesson-backend')).toContainText('the graphics card (WebGPU)');
  // The recording was trained on wasm: the page says a class on the GPU gets new runs.
  await expect(page.getByTestId('lesson-backend')).toContainText('differ a little from the recording’s (wasm)');
  await expect(page.getByTestId('lesson-start')).toBeEnabled();
  await page.getByTestId('lesson-start').click();
  await expect(page.getByTestId('lesson-run')).toHaveCount(4);
  await expect(page.getByTestId('lesson-estimate')).toHaveAttribute('data-source', 'done', { timeout: 420_000 });
  await expect(page.getByTestId('lesson-error'), errors.join(' | ')).toHaveCount(0);
  for (const chip of await page.getByTestId('lesson-run').all())
    await expect(chip).toHaveAttribute('data-phase', 'done');
  const success = page.getByTestId('chart-train/Bandit/success');
  await expect(success).toHaveAttribute('data-runs', '4');
  for (const arm of ['starpo', 'starpo-s'])
    await expect(success.locator(`[data-testid="chart-series"][data-arm="${arm}"]`)).toHaveCount(1);
  await expect(page.getByTestId('lesson-count')).toHaveAttribute('data-vanilla-runs', '2');
  await expect(page.getByTestId('lesson-count')).toHaveAttribute('data-starpo-s-runs', '2');
  await expect(page.getByTestId('lesson-count')).toContainText(
    /^vanilla StarPO collapsed in \d of 2 runs.*; StarPO-S in \d of 2/,
  );
});
