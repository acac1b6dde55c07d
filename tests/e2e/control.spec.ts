// Control and progress (issue #18): `step-progress` moves inside a step (phase and count), `run-status` says
// idle / running / stopping / stopped / done, and Stop takes effect within a couple of seconds wherever the step
// is, never losing the last checkpoint: a step still rolling out or scoring is dropped cleanly by the worker; a
// worker busy in its update (kernels that read no messages) is ended, and the run resumes from its last checkpoint.
import { expect, test, type Page } from '@playwright/test';
import { expectWorkingMatmul, saveScreenshot, watchErrors } from './helpers';

/**
 * bandit-tiny with a big batch and no filter (8 env groups x 32 rollouts, all kept): scoring and the update (32
 * optimizer steps) last long enough to press Stop in (on the 2-core test machine: scoring ~1 s, update ~4 s).
 */
const BIG_BATCH = 'backend=wasm&groups=8&groupSize=32&filter=1&val=2';

async function stepCount(page: Page): Promise<number> {
  return Number(await page.getByTestId('step-count').textContent());
}

/**
 * Starts recording, in the page, every text the `step-progress` element shows during step 1 (a MutationObserver sees
 * each change the page makes, however short-lived: no sampling clock). `takeProgressTexts` returns them.
 */
async function recordProgressTexts(page: Page): Promise<void> {
  await page.evaluate(() => {
    const el = document.querySelector('[data-testid="step-progress"]')!;
    const count = document.querySelector('[data-testid="step-count"]')!;
    const texts: string[] = [];
    (window as unknown as { progressTexts: string[] }).progressTexts = texts;
    new MutationObserver(() => {
      if (count.textContent !== '0') return; // step 1 is over
      const t = el.textContent!.trim();
      if (t && t !== texts.at(-1)) texts.push(t);
    }).observe(el, { childList: true, characterData: true, subtree: true });
  });
}

async function takeProgressTexts(page: Page): Promise<string[]> {
  return page.evaluate(() => (window as unknown as { progressTexts: string[] }).progressTexts);
}

/**
 * Resolves once the step in flight is past `steps` completed steps and in `phase`: checked on every change of the
 * progress element (a MutationObserver), so a phase is seen however short it is.
 */
async function waitForPhase(page: Page, steps: number, phase: string, timeout = 240_000): Promise<void> {
  await page.evaluate(
    ([n, p, ms]) =>
      new Promise<void>((resolve, reject) => {
        const el = document.querySelector('[data-testid="step-progress"]') as HTMLElement;
        const count = document.querySelector('[data-testid="step-count"]')!;
        const met = () => Number(count.textContent) >= n && el.dataset.phase === p;
        if (met()) return resolve();
        const timer = setTimeout(() => reject(new Error(`no ${p} phase after step ${n} within ${ms} ms`)), ms);
        const observer = new MutationObserver(() => {
          if (!met()) return;
          observer.disconnect();
          clearTimeout(timer);
          resolve();
        });
        observer.observe(el, { attributes: true, attributeFilter: ['data-phase'] });
      }),
    [steps, phase, timeout] as const,
  );
}

/** Milliseconds from now until run-status reads `status`, measured on the page's own change of that text. */
async function msUntilStatus(page: Page, status: string): Promise<number> {
  return page.evaluate(
    (wanted) =>
      new Promise<number>((resolve) => {
        const start = performance.now();
        const el = document.querySelector('[data-testid="run-status"]')!;
        if (el.textContent === wanted) return resolve(0);
        const observer = new MutationObserver(() => {
          if (el.textContent !== wanted) return;
          observer.disconnect();
          resolve(performance.now() - start);
        });
        observer.observe(el, { childList: true, characterData: true, subtree: true });
      }),
    status,
  );
}

test('control: step-progress moves inside a step; Stop before the update stops at once and keeps the last checkpoint', async ({
  page,
}, testInfo) => {
  test.setTimeout(400_000);
  const errors = watchErrors(page);
  await page.goto(`./?${BIG_BATCH}`);
  await expectWorkingMatmul(page);
  await expect(page.getByTestId('run-status')).toHaveText('idle');
  await expect(page.getByTestId('step-progress')).toHaveText('');
  await recordProgressTexts(page);
  await page.getByTestId('start').click();
  await expect(page.getByTestId('run-status')).toHaveText('running');

  // Every progress text of step 1, as the page showed it: the phases in order, and the count moving within one.
  await expect(page.getByTestId('step-count')).not.toHaveText('0', { timeout: 240_000 });
  const seen = await takeProgressTexts(page);
  testInfo.annotations.push({ type: 'step-progress texts of step 1', description: seen.join(' | ') });
  expect(
    seen.filter((t) => t.startsWith('rollout')).every((t) => /^rollout \d+\/48 tokens$/.test(t)),
    seen.join(' | '),
  ).toBe(true);
  const phases = seen.map((t) => t.split(' ')[0]).filter((p, i, a) => p !== a[i - 1]);
  expect(phases, seen.join(' | ')).toEqual(['validation', 'rollout', 'scoring', 'update']);
  // The worker always sends a phase's first count (0) and its changes after each optimizer step: the count moves.
  const updates = seen.filter((t) => t.startsWith('update'));
  expect(updates.length, seen.join(' | ')).toBeGreaterThanOrEqual(2);
  expect(
    updates.every((t) => /^update \d+\/32 optimizer steps$/.test(t)),
    seen.join(' | '),
  ).toBe(true);

  // Stop while step 2 is scoring (nothing of the step is kept yet): the worker drops that step and stops at once.
  await waitForPhase(page, 1, 'scoring');
  await saveScreenshot(page, testInfo, 'control-scoring');
  const done = await stepCount(page);
  await page.getByTestId('stop').click();
  const ms = await msUntilStatus(page, 'stopped');
  testInfo.annotations.push({ type: 'stop during scoring (ms)', description: String(Math.round(ms)) });
  expect(ms).toBeLessThan(2000);
  expect(await stepCount(page)).toBe(done);
  await expect(page.getByTestId('step-progress')).toHaveText('');
  await expect(page.getByTestId('stop')).toBeDisabled();
  // The stored run kept the checkpoint of the last completed step; the worker was not ended (nothing restarted).
  const item = page.getByTestId('run-item').first();
  await expect(item).toHaveAttribute('data-state', 'stopped');
  await expect(item).toHaveAttribute('data-checkpoint', String(done));
  await expect(page.getByTestId('run-message')).not.toContainText('dropped');
  await expect(page.getByTestId('matmul-check')).toHaveAttribute('data-status', 'pass');
  // The obvious next step is to go on: the big button says Resume; starting over is a button of its own.
  await expect(page.getByTestId('start')).toHaveText('Resume');
  await expect(page.getByTestId('start-new')).toBeEnabled();
  expect(errors).toEqual([]);
});

test('control: Stop during an update ends the busy worker within ~2 s; the run resumes from its last checkpoint', async ({
  page,
}, testInfo) => {
  test.setTimeout(400_000);
  const errors = watchErrors(page);
  await page.goto(`./?${BIG_BATCH}`);
  await expectWorkingMatmul(page);
  await page.getByTestId('start').click();
  await waitForPhase(page, 1, 'update');
  await expect(page.getByTestId('step-progress')).toHaveText(/^update \d+\/32 optimizer steps$/);
  const done = await stepCount(page);
  await page.getByTestId('stop').click();
  await expect(page.getByTestId('run-status')).toHaveText('stopping');
  await saveScreenshot(page, testInfo, 'control-stopping');
  const ms = await msUntilStatus(page, 'stopped');
  testInfo.annotations.push({ type: 'stop during update (ms after "stopping")', description: String(Math.round(ms)) });
  expect(ms).toBeLessThan(3000);
  expect(await stepCount(page)).toBe(done);
  await expect(page.getByTestId('run-message')).toContainText(`resume continues from the checkpoint of step ${done}`);

  // The run list agrees, and a new worker came up for what comes next.
  const item = page.getByTestId('run-item').first();
  await expect(item).toHaveAttribute('data-state', 'stopped');
  await expect(item).toHaveAttribute('data-checkpoint', String(done));
  await expectWorkingMatmul(page);

  // Resume (the big button): it continues from that checkpoint (not from step 0), with the charts' rows of the kept
  // steps only.
  await expect(page.getByTestId('start')).toHaveText('Resume');
  await page.getByTestId('start').click();
  await expect(page.getByTestId('run-message')).toHaveText(`resumed from the checkpoint of step ${done}`);
  await expect(page.getByTestId('step-count')).toHaveText(String(done + 1), { timeout: 240_000 });
  await page.getByTestId('pause').click();
  await expect(page.getByTestId('run-status')).toHaveText('paused', { timeout: 120_000 });
  // Steps 0 (validation before training) .. done + 1, each once.
  await expect(page.getByTestId('chart-actor/entropy_loss')).toHaveAttribute('data-points', String(done + 2));
  expect(errors).toEqual([]);
});

test('control: a short run ends as done', async ({ page }) => {
  test.setTimeout(300_000);
  await page.goto('./?backend=wasm&groups=4&groupSize=2&val=2&steps=1');
  await expectWorkingMatmul(page);
  await page.getByTestId('start').click();
  await expect(page.getByTestId('run-status')).toHaveText('done', { timeout: 240_000 });
  await expect(page.getByTestId('step-count')).toHaveText('1');
  await expect(page.getByTestId('stop')).toBeDisabled();
  await expect(page.getByTestId('start')).toBeEnabled(); // a new run can start
});

test('control: a run that cannot be built ends as failed with the reason, and the page stays usable', async ({
  page,
}) => {
  test.setTimeout(300_000);
  // A preset a tab cannot train is not offered, and a link to one says what it needs before anything starts.
  await page.goto('./?preset=sokoban-qwen&backend=wasm');
  await expect(page.getByTestId('error-preset')).toContainText('ragen train --preset sokoban-qwen --set model=PATH');
  await expect(page.getByTestId('preset-select').locator('option[value="sokoban-qwen"]')).toHaveCount(0);

  // The warm start's weights served broken (a half-uploaded site): the worker cannot build the run.
  const weights = '**/warmstart/bandit-tiny/model.safetensors';
  await page.context().route(weights, (route) =>
    route.fulfill({
      status: 200,
      contentType: 'application/octet-stream',
      body: Buffer.from('not a safetensors file'),
    }),
  );
  await page.goto('./?backend=wasm&groups=4&groupSize=2&val=2&steps=1');
  await expectWorkingMatmul(page);
  await page.getByTestId('start').click();
  await expect(page.getByTestId('run-status')).toHaveText('failed');
  await expect(page.getByTestId('training-error')).toContainText(
    'the warm-start checkpoint warmstart/bandit-tiny on this site could not be loaded',
  );
  await expect(page.getByTestId('run-item').first()).toHaveAttribute('data-state', 'failed');
  // Usable again: Start (a new run, not a resume), the setup, no Stop to press.
  await expect(page.getByTestId('start')).toHaveText('Start');
  await expect(page.getByTestId('start')).toBeEnabled();
  await expect(page.getByTestId('preset-select')).toBeEnabled();
  await expect(page.getByTestId('stop')).toBeDisabled();
  // With the site mended, Start trains.
  await page.context().unroute(weights);
  await page.getByTestId('start').click();
  await expect(page.getByTestId('run-status')).toHaveText('done', { timeout: 240_000 });
  await expect(page.getByTestId('training-error')).toHaveCount(0);
});
