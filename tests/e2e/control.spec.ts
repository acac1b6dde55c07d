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
const BIG_BATCH = 'backend=wasm&groups=8&groupSize=32&filter=1';
/**
 * Four times that (1,024 rollouts) for watching the counts move: the rollout of 256 short Bandit answers can end
 * in under 0.2 s, the interval at which the worker sends progress, and then shows a single count.
 */
const BIGGER_BATCH = 'backend=wasm&groups=32&groupSize=32&filter=1';

async function stepCount(page: Page): Promise<number> {
  return Number(await page.getByTestId('step-count').textContent());
}

/** Resolves once the step in flight is past `steps` completed steps and in `phase`. */
async function waitForPhase(page: Page, steps: number, phase: string, timeout = 240_000): Promise<void> {
  await page.waitForFunction(
    ([n, p]) =>
      Number(document.querySelector('[data-testid="step-count"]')!.textContent) >= Number(n) &&
      (document.querySelector('[data-testid="step-progress"]') as HTMLElement).dataset.phase === p,
    [String(steps), phase],
    { timeout, polling: 20 },
  );
}

/** Milliseconds from now until run-status reads `status`. */
async function msUntilStatus(page: Page, status: string): Promise<number> {
  return page.evaluate(
    (wanted) =>
      new Promise<number>((resolve) => {
        const start = performance.now();
        const check = () => {
          if (document.querySelector('[data-testid="run-status"]')!.textContent === wanted) resolve(performance.now() - start);
          else requestAnimationFrame(check);
        };
        check();
      }),
    status,
  );
}

test('control: step-progress moves inside a step; Stop before the update stops at once and keeps the last checkpoint', async ({ page }, testInfo) => {
  test.setTimeout(400_000);
  const errors = watchErrors(page);
  await page.goto(`./?${BIGGER_BATCH}`);
  await expectWorkingMatmul(page);
  await expect(page.getByTestId('run-status')).toHaveText('idle');
  await expect(page.getByTestId('step-progress')).toHaveText('');
  await page.getByTestId('start').click();
  await expect(page.getByTestId('run-status')).toHaveText('running');

  // Read the progress text many times a second through step 1: it must move within the step, phase by phase.
  const seen = await page.evaluate(async () => {
    const texts: string[] = [];
    const el = document.querySelector('[data-testid="step-progress"]')!;
    const count = document.querySelector('[data-testid="step-count"]')!;
    const start = performance.now();
    while (Number(count.textContent) < 1 && performance.now() - start < 200_000) {
      const t = el.textContent!.trim();
      if (t && t !== texts.at(-1)) texts.push(t);
      await new Promise((r) => setTimeout(r, 30));
    }
    return texts;
  });
  testInfo.annotations.push({ type: 'step-progress texts of step 1', description: seen.join(' | ') });
  const rollout = seen.filter((t) => /^rollout \d+\/48 tokens$/.test(t));
  expect(rollout.length, seen.join(' | ')).toBeGreaterThanOrEqual(2); // the count moves during the rollout
  const phases = [...new Set(seen.map((t) => t.split(' ')[0]))];
  expect(phases, seen.join(' | ')).toEqual(['validation', 'rollout', 'scoring', 'update']);
  expect(seen.filter((t) => t.startsWith('update')).length).toBeGreaterThanOrEqual(3);

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
  expect(errors).toEqual([]);
});

test('control: Stop during an update ends the busy worker within ~2 s; the run resumes from its last checkpoint', async ({ page }, testInfo) => {
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

  // Resume: it continues from that checkpoint (not from step 0), with the charts' rows of the kept steps only.
  await item.getByTestId('run-resume').click();
  await expect(page.getByTestId('run-message')).toHaveText(`resumed from the checkpoint of step ${done}`);
  await expect.poll(() => stepCount(page), { timeout: 240_000 }).toBe(done + 1);
  await page.getByTestId('pause').click();
  await expect(page.getByTestId('run-status')).toHaveText('paused', { timeout: 120_000 });
  // Steps 0 (validation before training) .. done + 1, each once.
  await expect(page.getByTestId('chart-actor/entropy_loss')).toHaveAttribute('data-points', String(done + 2));
  expect(errors).toEqual([]);
});

test('control: a short run ends as done', async ({ page }) => {
  test.setTimeout(300_000);
  await page.goto('./?backend=wasm&groups=4&groupSize=2&steps=1');
  await expectWorkingMatmul(page);
  await page.getByTestId('start').click();
  await expect(page.getByTestId('run-status')).toHaveText('done', { timeout: 240_000 });
  await expect(page.getByTestId('step-count')).toHaveText('1');
  await expect(page.getByTestId('stop')).toBeDisabled();
  await expect(page.getByTestId('start')).toBeEnabled(); // a new run can start
});
