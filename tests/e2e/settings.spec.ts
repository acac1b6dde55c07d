// The playground's settings live in the URL: a link reproduces a setup. The form and the URL share one set of
// limits, and a bad value (typed, or in a shared link) never makes a dead page: the field is highlighted with the
// reason in plain words, and fixing it in place makes the page usable again.
import { expect, test } from '@playwright/test';
import { saveScreenshot } from './helpers';
import { KNOB_SPECS } from '../../src/ui/settings';

test('settings: controls write the URL, and the URL restores the controls after a reload', async ({
  page,
}, testInfo) => {
  await page.goto('./?backend=wasm');
  await expect(page.getByTestId('preset-select')).toHaveValue('bandit-tiny');
  await page.getByTestId('preset-select').selectOption('frozenlake-tiny');
  await page.getByTestId('group-size').fill('2');
  await page.getByTestId('group-size').press('Enter');
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
  await expect(page.getByTestId('group-size')).toHaveValue('2');
  await expect(page.getByTestId('knob-filterRatio')).toHaveValue('1');
  await expect(page.getByTestId('algorithm-select')).toHaveValue('grpo');
  await expect(page.getByTestId('settings-error')).toHaveCount(0);
  await saveScreenshot(page, testInfo, 'settings-from-url');
});

test('settings: a shared link with out-of-range values opens a working page; each field is fixed in place', async ({
  page,
}, testInfo) => {
  await page.goto('./?backend=wasm&groups=100000&steps=1e9&turns=50&groupSize=2');
  // The backend starts anyway: a bad knob is not a reason for a dead page.
  await expect(page.getByTestId('backend')).toHaveText('wasm');
  await expect(page.getByTestId('group-size')).toHaveValue('2'); // the good value was kept
  const bad = [
    {
      param: 'groups',
      testid: 'knob-envGroups',
      value: '100000',
      fix: '4',
      message: "env groups (P) (URL parameter 'groups') needs a whole number from 1 to 64; 100000 is too large",
    },
    {
      param: 'steps',
      testid: 'knob-totalSteps',
      value: '1e9',
      fix: '5',
      message: 'needs a whole number from 1 to 10000; 1e9 is too large',
    },
    {
      param: 'turns',
      testid: 'knob-maxTurn',
      value: '50',
      fix: '1',
      message: 'needs a whole number from 1 to 20; 50 is too large',
    },
  ];
  for (const b of bad) {
    await expect(page.getByTestId(b.testid), b.param).toHaveAttribute('aria-invalid', 'true');
    await expect(page.getByTestId(b.testid)).toHaveValue(b.value); // shown as it came, to be fixed
    await expect(page.getByTestId(`error-${b.param}`)).toContainText(b.message);
  }
  await expect(page.getByTestId('start')).toBeDisabled();
  await expect(page.getByText('fix the highlighted setting first')).toBeVisible();
  await saveScreenshot(page, testInfo, 'settings-bad-link');

  // Fix them one by one: each error goes as its field is fixed; Start comes back once all are.
  for (const [i, b] of bad.entries()) {
    await page.getByTestId(b.testid).fill(b.fix);
    await page.getByTestId(b.testid).press('Enter');
    await expect(page.getByTestId(`error-${b.param}`)).toHaveCount(0);
    await expect(page.getByTestId(b.testid)).toHaveAttribute('aria-invalid', 'false');
    if (i < bad.length - 1) await expect(page.getByTestId('start')).toBeDisabled();
  }
  await expect(page.getByTestId('start')).toBeEnabled();
  const params = new URL(page.url()).searchParams;
  // turns 1 is the preset's own value, so the link no longer needs it.
  expect([params.get('groups'), params.get('steps'), params.get('turns'), params.get('groupSize')]).toEqual([
    '4',
    '5',
    null,
    '2',
  ]);
});

test('settings: the form refuses exactly what the URL refuses, with the same limits and words', async ({ page }) => {
  await page.goto('./?backend=wasm');
  for (const [name, spec] of Object.entries(KNOB_SPECS)) {
    if (spec.kind !== 'int' && spec.kind !== 'number') continue;
    const input = page.getByTestId(name === 'groupSize' ? 'group-size' : `knob-${name}`);
    if (!(await input.count())) continue;
    // The input's own limits are the table's.
    await expect(input, name).toHaveAttribute('min', String(spec.min));
    await expect(input, name).toHaveAttribute('max', String(spec.max));
  }
  // Typed: groups 100000 is refused with the words a link with groups=100000 gets.
  await page.getByTestId('knob-envGroups').fill('100000');
  await page.getByTestId('knob-envGroups').press('Enter');
  await expect(page.getByTestId('error-groups')).toHaveText(
    'env groups (P) needs a whole number from 1 to 64; 100000 is too large',
  );
  await expect(page.getByTestId('start')).toBeDisabled();
  expect(new URL(page.url()).searchParams.get('groups')).toBeNull(); // a refused value never reaches the URL
  await page.getByTestId('knob-envGroups').fill('64');
  await page.getByTestId('knob-envGroups').press('Enter');
  await expect(page.getByTestId('error-groups')).toHaveCount(0);
  await expect.poll(() => new URL(page.url()).searchParams.get('groups')).toBe('64');
});

test('settings: a filter that keeps no env group is explained in plain words on both fields, and fixed in place', async ({
  page,
}) => {
  await page.goto('./?backend=wasm&filter=0.05');
  const error = page.getByTestId('settings-error');
  await expect(error).toHaveText(
    'The filter keeps the top 0.05 × 8 env groups, which rounds down to 0: no group would be trained on. Raise the filter ratio to at least 0.13, or use at least 20 env groups.',
  );
  await expect(page.getByTestId('knob-filterRatio')).toHaveAttribute('aria-invalid', 'true');
  await expect(page.getByTestId('knob-envGroups')).toHaveAttribute('aria-invalid', 'true');
  await expect(page.getByTestId('backend')).toHaveText('wasm');
  await expect(page.getByTestId('start')).toBeDisabled();
  await expect(page.getByTestId('step-once')).toBeDisabled();
  // More env groups fix it as well as a higher ratio: 0.05 x 20 = 1 group.
  await page.getByTestId('knob-envGroups').fill('20');
  await page.getByTestId('knob-envGroups').press('Enter');
  await expect(error).toHaveCount(0);
  await expect(page.getByTestId('knob-filterRatio')).toHaveAttribute('aria-invalid', 'false');
  await expect(page.getByTestId('start')).toBeEnabled();
});

test('settings: an unknown preset in the URL is reported on its field, and the page works with the default', async ({
  page,
}) => {
  await page.goto('./?preset=chess-tiny&backend=wasm');
  await expect(page.getByTestId('error-preset')).toContainText("unknown preset 'chess-tiny'");
  await expect(page.getByTestId('preset-select')).toHaveAttribute('aria-invalid', 'true');
  await expect(page.getByTestId('backend')).toHaveText('wasm');
  await page.getByTestId('preset-select').selectOption('frozenlake-tiny');
  await expect(page.getByTestId('error-preset')).toHaveCount(0);
  await expect(page.getByTestId('start')).toBeEnabled();
  expect(new URL(page.url()).searchParams.get('preset')).toBe('frozenlake-tiny');
});
