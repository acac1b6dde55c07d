// Charts a student can read (issue #18): no empty white boxes before a run, every y axis labelled, success on a
// fixed 0-1 axis (0.40-0.52 must not look like a leap), legends that show values without hovering, and the echo-trap
// warning as a marker on every chart with one line saying what fired. Data comes from a real metrics.jsonl file
// through the page's import, as a CLI run would give it.
import { expect, test, type Page } from '@playwright/test';
import { contrastOnWhite, saveScreenshot } from './helpers';

/** A 12-step Bandit run whose success creeps from 0.41 to 0.52 and whose reward std and entropy collapse after step 6. */
function collapsingRun(extra: (step: number) => Record<string, unknown> = () => ({})): string {
  const lines = [];
  for (let step = 1; step <= 12; step++) {
    const level = step <= 6 ? 1 : 0.05;
    lines.push(
      JSON.stringify({
        step,
        'train/Bandit/success': 0.4 + step / 100,
        'rollout/in_group_std': level,
        'actor/entropy_loss': 0.5 * level,
        'actor/grad_norm': 1 + step / 10,
        'response_length/mean': 30,
        ...extra(step),
      }),
    );
  }
  return lines.join('\n') + '\n';
}

async function importMetrics(page: Page, text: string): Promise<void> {
  await page
    .getByTestId('import-file')
    .setInputFiles({ name: 'metrics.jsonl', mimeType: 'application/jsonl', buffer: Buffer.from(text) });
}

test('charts: before a run each card says what it will show, with no empty plot', async ({ page }, testInfo) => {
  await page.goto('./?backend=wasm');
  const charts = page.locator('[data-testid^="chart-"]');
  await expect(charts).toHaveCount(7);
  for (const chart of await charts.all()) {
    await expect(chart.locator('canvas')).toHaveCount(0);
    await expect(chart).toContainText('The curve appears after the first training step.');
    await expect(chart.locator('.watch')).not.toBeEmpty();
  }
  await expect(page.getByTestId('chart-train/Bandit/success')).toContainText('fixed 0–1');
  await saveScreenshot(page, testInfo, 'charts-before-a-run');
});

test('charts: labelled axes, success fixed at 0-1, values in the legend without hovering', async ({
  page,
}, testInfo) => {
  await page.goto('./?backend=wasm');
  await importMetrics(page, collapsingRun());
  const success = page.getByTestId('chart-train/Bandit/success');
  await expect(success).toHaveAttribute('data-points', '12');
  // The drawn y scale, read back from uPlot: 0-1 for success although the data spans 0.41-0.52 ...
  await expect(success).toHaveAttribute('data-y-scale', '0,1');
  await expect(success).toHaveAttribute('data-y-label', 'success rate');
  // ... while a metric without a natural range fits its data.
  const grad = page.getByTestId('chart-actor/grad_norm');
  await expect(grad).not.toHaveAttribute('data-y-scale', '');
  const [lo, hi] = (await grad.getAttribute('data-y-scale'))!.split(',').map(Number);
  expect(lo).toBeGreaterThan(0.5);
  expect(hi).toBeLessThan(3);
  // Every chart with data labels its y axis (with a unit) and shows its series' newest values.
  for (const key of [
    'train/Bandit/success',
    'rollout/in_group_std',
    'actor/entropy_loss',
    'actor/grad_norm',
    'response_length/mean',
  ]) {
    const chart = page.getByTestId(`chart-${key}`);
    expect((await chart.getAttribute('data-y-label'))!.length, key).toBeGreaterThan(3);
    await expect(chart.getByTestId('chart-series-value').first()).not.toHaveText('–');
  }
  await expect(success.getByTestId('chart-series').first()).toContainText('training');
  await expect(success.getByTestId('chart-series-value').first()).toHaveText('0.52'); // step 12's value, no hover
  await expect(grad.getByTestId('chart-series-value').first()).toHaveText('2.2');
  await expect(success).toContainText('latest (step 12)');
  // Hovering step 1 shows that step's value instead.
  await success.scrollIntoViewIfNeeded();
  const box = (await success.locator('.u-over').boundingBox())!;
  await page.mouse.move(box.x + 2, box.y + box.height / 2);
  await expect(success.getByTestId('chart-series-value').first()).toHaveText('0.41');
  await expect(success).toContainText('at step 1');
  // Series colours: dark enough for text (>= 4.5:1 on white), so lines are more than enough (3:1).
  for (const colour of await page
    .locator('[data-testid="chart-series"]')
    .evaluateAll((els) => els.map((e) => e.getAttribute('data-colour')!))) {
    expect(contrastOnWhite(colour), colour).toBeGreaterThanOrEqual(4.5);
  }
  await saveScreenshot(page, testInfo, 'charts-imported');
});

test('charts: the echo-trap warning is a marker on every chart with one line saying what fired', async ({ page }) => {
  await page.goto('./?backend=wasm');
  // First a run without the Trainer's echo_trap keys: the page runs the same detector.
  await importMetrics(page, collapsingRun());
  const warning = page.getByTestId('echo-trap-warning');
  await expect(warning).toContainText(
    'fired at step 8: in-group reward std fell to 5% and entropy to 5% of their early level',
  );
  for (const key of ['rollout/in_group_std', 'actor/entropy_loss', 'train/Bandit/success']) {
    const marker = page.getByTestId(`chart-${key}`).getByTestId('echo-trap-marker');
    await expect(marker, key).toHaveCount(1);
    await expect(marker).toHaveAttribute('data-step', '8');
    await expect(marker).toHaveAttribute('title', /fired at step 8/);
  }
  // Then a run that logged the warning itself (echo_trap/warning, the ratios and the text echo_trap/signal, as the
  // Trainer does, here with a stricter detector that fired later): the logged step, ratios and signal are what the
  // page says, not its own detector's.
  await importMetrics(
    page,
    collapsingRun((step) => ({
      'echo_trap/warning': step >= 10 ? 1 : 0,
      'echo_trap/reward_std_ratio': step >= 7 ? 0.05 : 1,
      'echo_trap/entropy_ratio': step >= 7 ? 0.2 : 1,
      'echo_trap/mi_ratio': step >= 7 ? 0.1 : 1,
      ...(step >= 10 ? { 'echo_trap/signal': 'reward_std+mi_zscore_ema' } : {}),
    })),
  );
  await expect(warning).toContainText(
    'fired at step 10: in-group reward std fell to 5% and the input dependence of the reasoning (MI z-score) to 10% of their early level (signal: reward_std+mi_zscore_ema)',
  );
  await expect(page.getByTestId('chart-actor/grad_norm').getByTestId('echo-trap-marker')).toHaveAttribute(
    'data-step',
    '10',
  );
});
