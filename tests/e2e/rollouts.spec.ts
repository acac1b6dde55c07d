// The rollout viewer (issue #18): it keeps the turn you are looking at when new data arrives, shows the board an
// episode ended on (a solved Sokoban level included), has a legend of the tiles, and says what Bandit's success
// means (picking the better arm, whatever one pull paid).
import { expect, test, type Page } from '@playwright/test';
import { makeEnv } from '../../envs/index';
import { writeTar } from '../../src/ui/tar';
import { expectWorkingMatmul, saveScreenshot } from './helpers';

async function stepCount(page: Page): Promise<number> {
  return Number(await page.getByTestId('step-count').textContent());
}

/** A run archive with one Sokoban episode solved in one turn, played by the real env (what the Trainer logs). */
function solvedSokobanArchive(): Buffer {
  const level = ['######', '#P_XO#', '#____#', '######'];
  const env = makeEnv('SimpleSokoban', { level });
  const start = env.reset(0);
  let reward = 0;
  let success = false;
  for (const action of ['Right', 'Right']) {
    const r = env.step(action);
    reward += r.reward;
    success = r.info.success;
  }
  expect(success).toBe(true);
  const record = {
    step: 1,
    split: 'train',
    envId: 0,
    groupId: 0,
    tag: 'SimpleSokoban',
    success,
    reward,
    score: reward,
    turns: [
      {
        turn: 1,
        state: start,
        think: 'The box is right of me and the target right of it: push twice.',
        answer: 'Right || Right',
        formatOk: true,
        actions: ['Right', 'Right'],
        reward,
      },
    ],
    finalState: env.render(),
  };
  const enc = new TextEncoder();
  return Buffer.from(
    writeTar([
      {
        path: 'metrics.jsonl',
        bytes: enc.encode(JSON.stringify({ step: 1, 'train/SimpleSokoban/success': 1 }) + '\n'),
      },
      { path: 'rollouts.jsonl', bytes: enc.encode(JSON.stringify(record) + '\n') },
    ]),
  );
}

test('rollouts: a solved episode ends on its solved board, with a legend of the tiles', async ({ page }, testInfo) => {
  await page.goto('./?backend=wasm');
  await page
    .getByTestId('import-file')
    .setInputFiles({ name: 'solved.tar', mimeType: 'application/x-tar', buffer: solvedSokobanArchive() });
  const viewer = page.getByTestId('rollout-viewer');
  await expect(viewer).toHaveAttribute('data-steps', '1');
  await expect(viewer.getByTestId('turn-position')).toHaveText('turn 1 of 1');
  await expect(viewer.locator('[data-tile="box"]').first()).toBeVisible();
  await viewer.getByTestId('turn-next').click();
  await expect(viewer.getByTestId('turn-position')).toHaveText('final state (solved)');
  const board = viewer.getByTestId('board');
  await expect(board.locator('[data-tile="box-on-target"]')).toHaveCount(1);
  await expect(board.locator('[data-tile="box"]')).toHaveCount(0);
  const legend = viewer.getByTestId('tile-legend');
  for (const label of ['wall', 'floor', 'box on target', 'player']) await expect(legend).toContainText(label);
  await expect(legend.locator('[data-tile="box"]')).toHaveCount(0); // only what is on the board
  await saveScreenshot(page, testInfo, 'rollouts-solved-board');
});

test('rollouts: the viewer keeps the turn being looked at when a new step arrives; Bandit success is explained', async ({
  page,
}, testInfo) => {
  test.setTimeout(300_000);
  await page.goto('./?backend=wasm&groups=4&groupSize=2&val=2');
  await expectWorkingMatmul(page);
  await page.getByTestId('start').click();
  const viewer = page.getByTestId('rollout-viewer');
  await expect
    .poll(async () => Number(await viewer.getAttribute('data-steps')), { timeout: 240_000 })
    .toBeGreaterThanOrEqual(2);
  // Following the newest step: go to the end of the episode (Bandit: one turn, then the final state).
  await viewer.getByTestId('turn-next').click();
  await expect(viewer.getByTestId('turn-position')).toHaveText(/^final state/);
  const steps = Number(await viewer.getAttribute('data-steps'));
  await expect
    .poll(async () => Number(await viewer.getAttribute('data-steps')), { timeout: 240_000 })
    .toBeGreaterThan(steps);
  // New data came in and is shown, but the view did not jump back to turn 1.
  await expect(viewer.getByTestId('turn-position')).toHaveText(/^final state/);
  await page.getByTestId('pause').click();
  await expect(page.getByTestId('run-status')).toHaveText('paused', { timeout: 120_000 });
  expect(await stepCount(page)).toBeGreaterThanOrEqual(2);
  // Bandit: success is about the arm chosen, said in words next to the reward.
  await expect(viewer.getByTestId('trajectory-success')).toHaveText(/^[✓✗] picked the (better|worse) arm$/);
  await expect(viewer).toContainText('so a success can still pay 0');
  await saveScreenshot(page, testInfo, 'rollouts-bandit');
});
