// The playground trains every one-arm tiny preset (issue 15, target 7): one real step of each, from its shipped warm
// start, in the browser on wasm, with the episodes it played in the rollout viewer. A small batch (4 env groups x 2
// rollouts, 4 validation groups) keeps a step short; everything else is the preset's own (model size, prompt, turns,
// env settings).
import { expect, test } from '@playwright/test';
import { presetConfig, tinyPresetNames } from '../../src/starpo/presets';
import { expectWorkingMatmul, watchErrors } from './helpers';

const TINY_PRESETS = tinyPresetNames();

test('presets: the list covers the tiny board presets', () => {
  expect(TINY_PRESETS).toEqual(
    expect.arrayContaining(['bandit-tiny', 'frozenlake-tiny', 'frozenlake-noslip-tiny', 'sokoban-tiny']),
  );
});

for (const preset of TINY_PRESETS) {
  test(`presets: the playground trains a step of ${preset}`, async ({ page }) => {
    test.setTimeout(300_000);
    const errors = watchErrors(page);
    await page.goto(`./?preset=${preset}&backend=wasm&groups=4&groupSize=2&val=4&steps=1&seed=5`);
    await expectWorkingMatmul(page);
    await expect(page.getByTestId('preset-select')).toHaveValue(preset);
    await expect(page.getByTestId('knob-valGroups')).toHaveValue('4');
    await page.getByTestId('start').click();
    await expect(page.getByTestId('run-status')).toHaveText('done', { timeout: 240_000 });
    await expect(page.getByTestId('step-count')).toHaveText('1');
    const viewer = page.getByTestId('rollout-viewer');
    await expect(viewer).toHaveAttribute('data-steps', /^[1-9]/);
    await expect(viewer).not.toHaveAttribute('data-trajectories', '0');
    // The board games show the board the agent saw (Bandit has none).
    if (presetConfig(preset).agent.trainEnvs[0].tag !== 'Bandit')
      await expect(viewer.getByTestId('board').first()).toBeVisible();
    expect(errors).toEqual([]);
  });
}
