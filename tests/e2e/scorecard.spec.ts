// Issue #7's browser proof: the playground computes the same checkpoint scorecard as `ragen eval`, in the trainer
// worker, for the current policy (here the bandit-tiny warm start) and for a stored run's checkpoint.
import { expect, test } from '@playwright/test';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { expectWorkingMatmul, saveScreenshot, watchErrors } from './helpers';

/** A success cell: "37.5% [13.7%, 69.4%]" (rate and its 95% interval, each within 0..100%). */
const SUCCESS_CELL = /^(\d{1,3}\.\d)% \[(\d{1,3}\.\d)%, (\d{1,3}\.\d)%\]$/;

test('scorecard: the current bandit-tiny policy is scored as `ragen eval` scores it, and so is a stored checkpoint', async ({
  page,
}, testInfo) => {
  test.setTimeout(120_000);
  const errors = watchErrors(page);
  // Small training steps, so the stored-checkpoint part below needs only seconds.
  await page.goto('./?preset=bandit-tiny&backend=wasm&groups=4&groupSize=2');
  await expect(page.getByTestId('backend'), `page errors: ${errors.join(' | ')}`).toHaveText('wasm');
  await expectWorkingMatmul(page);

  const panel = page.getByTestId('scorecard-panel');
  await expect(panel.getByTestId('scorecard-episodes')).toHaveValue('8');
  await panel.getByTestId('scorecard-run').click();
  const table = panel.getByTestId('scorecard-table');
  await expect(table, `page errors: ${errors.join(' | ')}`).toBeVisible({ timeout: 90_000 });
  await expect(panel.getByTestId('scorecard-error')).toHaveCount(0);
  await expect(panel.getByTestId('scorecard-policy')).toContainText('current policy (step 0)');
  await expect(panel.getByTestId('scorecard-policy')).toContainText('8 seeds from 123');

  // Bandit's default suites: the training env on held-out seeds, RAGEN's test arm names, the swapped names.
  const rows = table.getByTestId('scorecard-row');
  await expect(rows).toHaveCount(3);
  expect(await rows.evaluateAll((els) => els.map((e) => e.getAttribute('data-suite')))).toEqual([
    'Bandit',
    'BanditTest',
    'Bandit-Swapped',
  ]);
  for (const suite of ['Bandit', 'BanditTest', 'Bandit-Swapped']) {
    const row = table.locator(`[data-suite="${suite}"]`);
    const success = (await row.getByTestId('scorecard-success').textContent())!.trim();
    const m = SUCCESS_CELL.exec(success);
    expect(m, `${suite} success cell: '${success}'`).not.toBeNull();
    const [rate, lo, hi] = m!.slice(1).map(Number);
    // The interval holds the rate and stays in [0, 100]; with 8 episodes a Wilson interval is never a point.
    expect(lo).toBeLessThanOrEqual(rate);
    expect(rate).toBeLessThanOrEqual(hi);
    expect(hi).toBeLessThanOrEqual(100);
    expect(hi - lo).toBeGreaterThan(10);
    // k = 1: pass@1 is the success rate itself.
    await expect(row.getByTestId('scorecard-pass-at-k')).toHaveText(`${rate.toFixed(1)}%`);
    await expect(row.getByTestId('scorecard-format-errors')).toHaveText(/^\d{1,3}\.\d%$/);
    await expect(row.getByTestId('scorecard-optimum')).toHaveText('100.0%'); // Bandit: the high arm is always there
    await expect(row.getByTestId('scorecard-distinct-2')).toHaveText(/^(0|1)\.\d\d$/);
  }
  await saveScreenshot(page, testInfo, 'scorecard-current-policy');

  // The same scorecard as the CLI: `ragen eval` of the warm start, same size, same backend, gives the same counts.
  const cliOut = testInfo.outputPath('cli-scorecard.json');
  execFileSync(
    'node',
    [
      'bin/ragen.js',
      'eval',
      '--checkpoint',
      'public/warmstart/bandit-tiny',
      '--episodes',
      '8',
      '--backend',
      'wasm',
      '--quiet',
      '--out',
      cliOut,
    ],
    {
      timeout: 60_000,
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  type CliSuite = {
    suite: string;
    success: { successes: number };
    grounding: { rate: number | null; answerAgreement: number | null };
  };
  const cli = JSON.parse(readFileSync(cliOut, 'utf8')) as { suites: CliSuite[] };
  const browser = await rows.evaluateAll((els) =>
    els.map((e) => ({ suite: e.getAttribute('data-suite'), successes: Number(e.getAttribute('data-successes')) })),
  );
  expect(browser).toEqual(cli.suites.map((s) => ({ suite: s.suite, successes: s.success.successes })));
  // Is the reasoning about the state: the same grounding and answer agreement as the CLI's (null there is '-' here).
  const pct = (x: number | null) => (x === null ? '-' : `${(100 * x).toFixed(1)}%`);
  const grounding = panel.getByTestId('scorecard-grounding-table');
  for (const s of cli.suites) {
    const row = grounding.locator(`[data-suite="${s.suite}"]`);
    await expect(row.getByTestId('scorecard-grounding')).toHaveText(pct(s.grounding.rate));
    await expect(row.getByTestId('scorecard-answer-agreement')).toHaveText(pct(s.grounding.answerAgreement));
  }
  // The warm start talks about Dragon and Phoenix, the held-out suite's arms: there its claims are checked.
  await expect(grounding.locator('[data-suite="Bandit"]').getByTestId('scorecard-grounding')).toHaveText(
    /^\d{1,3}\.\d%$/,
  );

  // The run the scorecard built sits in Saved runs at step 0, without a checkpoint yet: scoring it says so.
  const item = page.getByTestId('run-item').first();
  await item.getByTestId('run-score').click();
  await expect(panel.getByTestId('scorecard-error')).toContainText('no stored checkpoint');

  // One training step leaves a checkpoint in IndexedDB (every pause keeps one); its scorecard comes from those files.
  await page.getByTestId('step-once').click();
  await expect(page.getByTestId('run-status')).toHaveText('paused', { timeout: 60_000 });
  await expect(item).toHaveAttribute('data-step', '1');
  await item.getByTestId('run-score').click();
  await expect(panel.getByTestId('scorecard-policy')).toContainText('checkpoint of step 1', { timeout: 60_000 });
  await expect(panel.getByTestId('scorecard-error')).toHaveCount(0);
  await expect(rows).toHaveCount(3);
  await expect(table.locator('[data-suite="Bandit-Swapped"]').getByTestId('scorecard-success')).toHaveText(
    SUCCESS_CELL,
  );
  await saveScreenshot(page, testInfo, 'scorecard-stored-checkpoint');
  expect(errors.filter((e) => !e.includes('favicon'))).toEqual([]);
});
