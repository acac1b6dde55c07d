// The playground's settings live in the URL: a link reproduces a setup, and a setup that makes no valid RunConfig
// is refused by name before anything runs.
import { expect, test } from '@playwright/test';
import { saveScreenshot } from './helpers';

test('settings: controls write the URL, and the URL restores the controls after a reload', async ({ page }, testInfo) => {
  await page.goto('./?backend=wasm');
  await expect(page.getByTestId('preset-select')).toHaveValue('bandit-tiny');
  await page.getByTestId('preset-select').selectOption('frozenlake-tiny');
  await page.getByTestId('knob-groupSize').fill('2');
  await page.getByTestId('knob-groupSize').press('Enter');
  await page.getByTestId('variant-starpo').click();
  await page.getByTestId('algorithm-select').selectOption('grpo');
  await expect.poll(() => new URL(page.url()).searchParams.get('groupSize')).toBe('2');
  const params = new URL(page.url()).searchParams;
  expect(params.get('preset')).toBe('frozenlake-tiny');
  expect(params.get('backend')).toBe('wasm');
  expect(params.get('filter')).toBe('1');
  expect(params.get('kl')).toBe('0.001');
  expect(params.get('clipHigh')).toBe('0.2');
  expect(params.get('algo')).toBe('grpo');
  await page.reload();
  await expect(page.getByTestId('preset-select')).toHaveValue('frozenlake-tiny');
  await expect(page.getByTestId('knob-groupSize')).toHaveValue('2');
  await expect(page.getByTestId('knob-filterRatio')).toHaveValue('1');
  await expect(page.getByTestId('algorithm-select')).toHaveValue('grpo');
  await expect(page.getByTestId('settings-error')).toHaveCount(0);
  await saveScreenshot(page, testInfo, 'settings-from-url');
});

test('settings: a filter that keeps no env group is refused by name and Start stays off', async ({ page }) => {
  await page.goto('./?backend=wasm&filter=0.05');
  await expect(page.getByTestId('settings-error')).toContainText('filter.ratio');
  await expect(page.getByTestId('backend')).toHaveText('wasm');
  await expect(page.getByTestId('start')).toBeDisabled();
  await expect(page.getByTestId('step-once')).toBeDisabled();
});

test('settings: an unknown preset in the URL is reported by name', async ({ page }) => {
  await page.goto('./?preset=chess-tiny');
  await expect(page.getByTestId('error')).toContainText("unknown preset 'chess-tiny'");
});
