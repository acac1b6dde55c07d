// Issue 35's views for a class and for comparing: presentation mode (`?present`: setup and backend hidden, charts and
// reasoning large, kept by a shared link) and saved runs overlaid on the same charts (one colour each, the legend by
// run name). Neither trains: the runs are imported archives in the CLI's layout.
import { expect, test } from '@playwright/test';
import { presetConfig } from '../../src/starpo/presets';
import { writeTar } from '../../src/ui/tar';
import { watchErrors } from './helpers';

/** A run archive (config.json + metrics.jsonl) whose entropy runs at `level`, over 6 steps. */
function archive(level: number): Buffer {
  const encoder = new TextEncoder();
  const rows = Array.from({ length: 6 }, (_, i) => ({
    step: i + 1,
    'actor/entropy_loss': level - 0.1 * i,
    'train/Bandit/success': 0.1 * i,
    'actor/grad_norm': 1,
  }));
  return Buffer.from(
    writeTar([
      { path: 'config.json', bytes: encoder.encode(JSON.stringify(presetConfig('bandit-tiny'))) },
      { path: 'metrics.jsonl', bytes: encoder.encode(rows.map((r) => JSON.stringify(r)).join('\n') + '\n') },
    ]),
  );
}

test('present: ?present hides setup and backend, draws charts large, and a shared link keeps it', async ({ page }) => {
  const errors = watchErrors(page);
  await page.goto('./?backend=wasm&groups=4');
  // Entering it from the page keeps the settings in the link.
  await page.getByTestId('present-link').click();
  await expect(page.locator('main')).toHaveAttribute('data-present', 'true');
  const url = new URL(page.url());
  expect(url.searchParams.has('present')).toBe(true);
  expect(url.searchParams.get('groups')).toBe('4');
  await expect(page.getByTestId('preset-select')).toHaveCount(0);
  await expect(page.getByTestId('backend-select')).toHaveCount(0);
  await expect(page.getByTestId('start')).toBeVisible(); // the transport bar stays: a teacher still starts and stops
  await expect(page.locator('#charts')).toBeVisible();
  // Large: the page's root font grows (every rem with it).
  expect(await page.evaluate(() => getComputedStyle(document.documentElement).fontSize)).toBe('20px');

  // The same link in a fresh profile is the same view.
  const fresh = await page.context().browser()!.newPage();
  await fresh.goto(url.pathname + url.search);
  await expect(fresh.locator('main')).toHaveAttribute('data-present', 'true');
  await expect(fresh.getByTestId('preset-select')).toHaveCount(0);
  await fresh.close();

  // Leaving it brings the setup back, settings kept.
  await page.getByTestId('present-exit').click();
  await expect(page.getByTestId('preset-select')).toBeVisible();
  expect(new URL(page.url()).searchParams.has('present')).toBe(false);
  expect(new URL(page.url()).searchParams.get('groups')).toBe('4');
  expect(errors).toEqual([]);
});

test('compare: two saved runs overlaid on the same charts, one colour each, the legend by run name', async ({
  page,
}) => {
  const errors = watchErrors(page);
  await page.goto('./?backend=wasm');
  await page
    .getByTestId('import-file')
    .setInputFiles({ name: 'low.tar', mimeType: 'application/x-tar', buffer: archive(1) });
  await page
    .getByTestId('import-file')
    .setInputFiles({ name: 'high.tar', mimeType: 'application/x-tar', buffer: archive(2) });
  await expect(page.getByTestId('run-item')).toHaveCount(2);
  const overlay = page.getByTestId('runs-overlay');
  await expect(overlay).toBeDisabled(); // nothing ticked yet
  for (const box of await page.getByTestId('run-compare').all()) await box.check();
  await overlay.click();
  const chart = page.getByTestId('chart-actor/entropy_loss');
  await expect(chart).toHaveAttribute('data-series', '2');
  for (const name of ['low.tar (imported)', 'high.tar (imported)']) {
    await expect(chart.locator(`[data-testid="chart-series"][data-arm="${name}"]`)).toBeVisible();
  }
  const colours = await page
    .locator('[aria-label="Charts"] .arms [data-arm]')
    .evaluateAll((els) => els.map((e) => [e.getAttribute('data-arm'), e.getAttribute('data-colour')]));
  expect(colours.map(([arm]) => arm).sort()).toEqual(['high.tar (imported)', 'low.tar (imported)']);
  expect(new Set(colours.map(([, c]) => c)).size).toBe(2);
  expect(errors).toEqual([]);
});
