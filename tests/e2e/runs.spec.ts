// The saved-runs list tells the truth (issue #18): a live run shows its live step, a reloaded tab shows nothing as
// running, resume is offered only where there is a checkpoint and steps left, delete asks first, and open puts the
// run's settings back in the form and the URL.
import { expect, test, type Page } from '@playwright/test';
import { expectWorkingMatmul, saveScreenshot } from './helpers';

async function stepCount(page: Page): Promise<number> {
  return Number(await page.getByTestId('step-count').textContent());
}

test('runs: the list follows the live run, and after a reload nothing is listed as running', async ({
  page,
}, testInfo) => {
  test.setTimeout(300_000);
  await page.goto('./?backend=wasm&groups=4&groupSize=4&val=2');
  await expectWorkingMatmul(page);
  await page.getByTestId('start').click();
  await expect.poll(() => stepCount(page), { timeout: 240_000 }).toBeGreaterThanOrEqual(2);
  const item = page.getByTestId('run-item').first();
  // Live: the item's step is the counter's, and it says running.
  await expect
    .poll(async () => Number(await item.getAttribute('data-step')) - (await stepCount(page)), { timeout: 5000 })
    .toBe(0);
  await expect(item.getByTestId('run-state')).toContainText('running, step');
  await expect(item.getByTestId('run-state')).toContainText('checkpoint of step');
  await saveScreenshot(page, testInfo, 'runs-live');

  // Reload mid-run: no worker holds the run any more, so it is not "running", and it can be resumed.
  await page.reload();
  await expectWorkingMatmul(page);
  await expect(item).toHaveAttribute('data-state', 'interrupted');
  await expect(item.getByTestId('run-state')).toContainText('not running (left at step');
  await expect(item.getByTestId('run-resume')).toBeEnabled();
  await expect(page.getByTestId('run-status')).toHaveText('idle');
  // The run is back on screen, and the big button continues it.
  await expect(page.getByTestId('start')).toHaveText('Resume');
});

test('runs: resume only where a checkpoint and steps are left; delete asks first; open restores the settings', async ({
  page,
}, testInfo) => {
  test.setTimeout(400_000);
  await page.goto('./?backend=wasm&groups=4&groupSize=2&val=2&steps=1');
  await expectWorkingMatmul(page);
  // Run A: one step, to the end.
  await page.getByTestId('start').click();
  await expect(page.getByTestId('run-status')).toHaveText('done', { timeout: 240_000 });
  const items = page.getByTestId('run-item');
  await expect(items).toHaveCount(1);
  const idA = (await items.first().getAttribute('data-run-id'))!;
  const runA = page.locator(`[data-testid="run-item"][data-run-id="${idA}"]`);
  await expect(runA).toHaveAttribute('data-state', 'done');
  await expect(runA.getByTestId('run-resume')).toBeDisabled();
  await expect(runA.getByTestId('run-resume')).toHaveAttribute('title', /finished \(1 of 1 steps\): nothing to resume/);

  // Run B, with another group size, stopped in its first step: no checkpoint, so no resume. 4 x 32 rollouts make the
  // step long enough for Stop to land inside it however fast a step is (a 4 x 3 step could end before the click).
  await page.getByTestId('group-size').fill('32');
  await page.getByTestId('group-size').press('Enter');
  await expect.poll(() => new URL(page.url()).searchParams.get('groupSize')).toBe('32');
  await page.getByTestId('start').click();
  await expect(items).toHaveCount(2);
  await page.waitForFunction(
    () => (document.querySelector('[data-testid="step-progress"]') as HTMLElement).dataset.phase !== '',
    null,
    { timeout: 120_000 },
  );
  await page.getByTestId('stop').click();
  await expect(page.getByTestId('run-status')).toHaveText('stopped', { timeout: 10_000 });
  const runB = page.locator(`[data-testid="run-item"]:not([data-run-id="${idA}"])`);
  await expect(runB).toHaveAttribute('data-state', 'stopped');
  await expect(runB).toHaveAttribute('data-checkpoint', '');
  await expect(runB.getByTestId('run-resume')).toBeDisabled();
  await expect(runB.getByTestId('run-resume')).toHaveAttribute('title', /no checkpoint yet/);

  // Open run A: its settings (group size 2) come back to the form and the URL.
  await runA.getByTestId('run-open').click();
  await expect(page.getByTestId('group-size')).toHaveValue('2');
  await expect.poll(() => new URL(page.url()).searchParams.get('groupSize')).toBe('2');
  await expect(page.getByTestId('chart-actor/entropy_loss')).toHaveAttribute('data-points', '2');

  // Delete asks first: "keep" keeps it, "yes, delete" removes it.
  await runB.getByTestId('run-delete').click();
  await expect(runB.getByTestId('run-delete-confirm')).toBeVisible();
  await saveScreenshot(page, testInfo, 'runs-delete-confirm');
  await runB.getByTestId('run-delete-cancel').click();
  await expect(items).toHaveCount(2);
  await runB.getByTestId('run-delete').click();
  await runB.getByTestId('run-delete-confirm').click();
  await expect(items).toHaveCount(1);
  await expect(items.first()).toHaveAttribute('data-state', 'done');
});
