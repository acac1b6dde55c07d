// Issue #5's browser proof: the built page trains bandit-tiny for real in the trainer worker (the same Trainer as
// the CLI), the step counter advances, the charts and the rollout viewer fill, pause holds and Resume continues,
// and a reloaded tab comes back to the run (IndexedDB) with Resume on the big button. Every wait is on something the
// page shows (a text, an attribute), never on a clock.
import { expect, test, type Page } from '@playwright/test';
import { expectWorkingMatmul, saveScreenshot, watchErrors } from './helpers';

/** A small bandit-tiny setup: 4 env groups x 4 rollouts and 2 validation groups (one per name pair), so a step takes seconds on wasm. */
const SMALL = 'preset=bandit-tiny&groups=4&groupSize=4&val=2';

async function stepCount(page: Page): Promise<number> {
  return Number(await page.getByTestId('step-count').textContent());
}

async function waitForSteps(page: Page, atLeast: number, timeout = 120_000): Promise<void> {
  await expect
    .poll(() => stepCount(page), { timeout, message: `step-count should reach ${atLeast}` })
    .toBeGreaterThanOrEqual(atLeast);
}

test('training: bandit-tiny on wasm trains, fills charts and rollouts, pauses, resumes, and survives a reload', async ({
  page,
}, testInfo) => {
  test.setTimeout(360_000);
  const errors = watchErrors(page);
  await page.goto(`./?${SMALL}&backend=wasm`);
  await expect(page.getByTestId('backend'), `page errors: ${errors.join(' | ')}`).toHaveText('wasm');
  await expectWorkingMatmul(page);
  await page.getByTestId('preset-select').selectOption('bandit-tiny');
  await expect(page.getByTestId('step-count')).toHaveText('0');
  await saveScreenshot(page, testInfo, 'training-loaded');

  await page.getByTestId('start').click();
  await waitForSteps(page, 2);
  await expect(page.getByTestId('training-error'), `page errors: ${errors.join(' | ')}`).toHaveCount(0);

  // Charts: every paper indicator has points (step 0 is the validation row, so success has 1 more).
  for (const key of [
    'actor/entropy_loss',
    'actor/grad_norm',
    'rollout/in_group_std',
    'response_length/mean',
    'reasoning_length/mean',
  ]) {
    const chart = page.getByTestId(`chart-${key}`);
    await expect
      .poll(async () => Number(await chart.getAttribute('data-points')), { message: key })
      .toBeGreaterThanOrEqual(2);
    await expect(chart.locator('canvas')).toBeVisible();
  }
  await expect
    .poll(async () => Number(await page.getByTestId('chart-train/Bandit/success').getAttribute('data-series')))
    .toBeGreaterThanOrEqual(1);

  // Rollout viewer: trajectories of the latest step, drawn as a bandit board with the model's text.
  const viewer = page.getByTestId('rollout-viewer');
  await expect.poll(async () => Number(await viewer.getAttribute('data-steps'))).toBeGreaterThanOrEqual(2);
  await expect(viewer.getByTestId('board').first()).toHaveAttribute('data-kind', 'bandit');
  await expect(viewer.getByTestId('turn-answer')).toBeVisible();
  await saveScreenshot(page, testInfo, 'training-running');

  // Pause: the run settles as paused after the step in flight, with its checkpoint stored at that step.
  await page.getByTestId('pause').click();
  await expect(page.getByTestId('run-status')).toHaveText('paused', { timeout: 120_000 });
  const paused = await stepCount(page);
  const entropy = page.getByTestId('chart-actor/entropy_loss');
  await expect(entropy).toHaveAttribute('data-points', String(paused + 1)); // steps 0 .. paused
  await expect(page.getByTestId('run-item').first()).toHaveAttribute('data-checkpoint', String(paused));
  await saveScreenshot(page, testInfo, 'training-paused');

  // Resume: it continues from where it paused, every step once (one chart point per step, none skipped or redone).
  await expect(page.getByTestId('start')).toHaveText('Resume');
  await page.getByTestId('start').click();
  await expect(page.getByTestId('step-count')).not.toHaveText(String(paused), { timeout: 120_000 });
  await page.getByTestId('pause').click();
  await expect(page.getByTestId('run-status')).toHaveText('paused', { timeout: 120_000 });
  const beforeReload = await stepCount(page);
  expect(beforeReload).toBeGreaterThan(paused);
  await expect(entropy).toHaveAttribute('data-points', String(beforeReload + 1));
  const pointsBeforeReload = await entropy.getAttribute('data-points');

  // Reload: the run comes back on screen by itself (IndexedDB): its charts, and Resume on the big button, which
  // continues it from its checkpoint.
  await page.reload();
  await expect(page.getByTestId('backend')).toHaveText('wasm');
  const item = page.getByTestId('run-item').first();
  await expect(item).toHaveAttribute('data-step', String(beforeReload));
  await expect(entropy).toHaveAttribute('data-points', String(pointsBeforeReload));
  await saveScreenshot(page, testInfo, 'training-reloaded');
  await expectWorkingMatmul(page);
  await expect(page.getByTestId('start')).toHaveText('Resume');
  await page.getByTestId('start').click();
  await expect(page.getByTestId('run-message')).toHaveText(`resumed from the checkpoint of step ${beforeReload}`);
  await expect(page.getByTestId('step-count')).toHaveText(String(beforeReload + 1), { timeout: 120_000 });
  await expect(page.getByTestId('time-left')).toHaveText(/^[\d.]+ steps\/min · (about \d+ (s|min) left|last step)$/);
  await expect(page.getByTestId('run-status')).not.toHaveText('failed');
  await page.getByTestId('pause').click();
  await expect(page.getByTestId('run-status')).toHaveText('paused', { timeout: 120_000 });
  await saveScreenshot(page, testInfo, 'training-resumed');
  expect(errors.filter((e) => !e.includes('favicon'))).toEqual([]);
});
