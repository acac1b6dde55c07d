// The page as a newcomer first meets it (issue #18): a dismissable first-visit explainer, readable text (WCAG AA),
// a pressed state for the active variant that does not look like the focus ring, a labelled custom-board field, and
// a phone layout that is a few short tabs instead of one 4,000 px column.
import { expect, test } from '@playwright/test';
import { lowContrastText, saveScreenshot, watchErrors } from './helpers';

test('layout: the first visit explains the page; dismissed, it stays closed after a reload and can be reopened', async ({
  page,
}) => {
  await page.goto('./?backend=wasm');
  const explainer = page.getByTestId('explainer');
  await expect(explainer).toBeVisible();
  await expect(explainer).toContainText('Press Start');
  await expect(explainer).toContainText('echo trap');
  await page.getByTestId('explainer-dismiss').click();
  await expect(explainer).toHaveCount(0);
  await page.reload();
  await expect(page.getByTestId('backend')).toHaveText('wasm');
  await expect(explainer).toHaveCount(0);
  await page.getByTestId('explainer-open').click();
  await expect(explainer).toBeVisible();
});

test('layout: every text on the page reaches AA contrast, before and after a run is on the charts', async ({
  page,
}) => {
  await page.goto('./?backend=wasm');
  await expect(page.getByTestId('matmul-check')).toHaveAttribute('data-status', 'pass');
  expect(await lowContrastText(page)).toEqual([]);
  // A run on the charts (a CLI metrics.jsonl), so legends, axes' cards and the echo-trap warning are on screen.
  const lines = [];
  for (let step = 1; step <= 12; step++) {
    const level = step <= 6 ? 1 : 0.05;
    lines.push(
      JSON.stringify({
        step,
        'rollout/in_group_std': level,
        'actor/entropy_loss': 2 * level,
        'actor/grad_norm': 1,
        'train/Bandit/success': 0.4 + step / 100,
      }),
    );
  }
  await page.getByTestId('import-file').setInputFiles({
    name: 'metrics.jsonl',
    mimeType: 'application/jsonl',
    buffer: Buffer.from(lines.join('\n') + '\n'),
  });
  await expect(page.getByTestId('echo-trap-warning')).toBeVisible();
  expect(await lowContrastText(page)).toEqual([]);
});

test('layout: the active variant button is pressed (aria-pressed, filled), unlike the focus ring; the board field has a label', async ({
  page,
}) => {
  await page.goto('./?backend=wasm');
  const starpoS = page.getByTestId('variant-starpo-s');
  const vanilla = page.getByTestId('variant-starpo');
  await expect(starpoS).toHaveAttribute('aria-pressed', 'true');
  await expect(vanilla).toHaveAttribute('aria-pressed', 'false');
  const look = (id: string) =>
    page.getByTestId(id).evaluate((el) => ({
      background: getComputedStyle(el).backgroundColor,
      outline: getComputedStyle(el).outlineStyle,
    }));
  const pressed = await look('variant-starpo-s');
  const unpressed = await look('variant-starpo');
  expect(pressed.background).not.toBe(unpressed.background);
  expect(pressed.outline).toBe('none'); // pressed is a fill, not an outline
  // Focus on the unpressed one: a ring (outline), not the pressed fill.
  await vanilla.focus();
  await page.keyboard.press('Tab');
  await page.keyboard.press('Shift+Tab');
  const focused = await look('variant-starpo');
  expect(focused.outline).not.toBe('none');
  expect(focused.background).toBe(unpressed.background);
  // Pressing it moves the pressed state.
  await vanilla.click();
  await expect(vanilla).toHaveAttribute('aria-pressed', 'true');
  await expect(starpoS).toHaveAttribute('aria-pressed', 'false');
  // The custom board's textarea is reachable by its label.
  await expect(page.getByLabel(/level, one row per line/)).toHaveAttribute('data-testid', 'custom-level-input');
});

test('layout: on a 390 px phone the page is short tabs under a sticky bar with Start and Stop', async ({
  page,
}, testInfo) => {
  const errors = watchErrors(page);
  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto('./?backend=wasm');
  await expect(page.getByTestId('matmul-check')).toHaveAttribute('data-status', 'pass');
  await page.getByTestId('explainer-dismiss').click();
  const heights: Record<string, number> = {};
  for (const tab of ['setup', 'charts', 'rollouts', 'runs']) {
    await page.getByTestId(`tab-${tab}`).click();
    await expect(page.getByTestId(`tab-${tab}`)).toHaveAttribute('aria-pressed', 'true');
    heights[tab] = await page.evaluate(() => document.documentElement.scrollHeight);
    // Nothing is wider than the phone.
    expect(await page.evaluate(() => document.documentElement.scrollWidth), tab).toBeLessThanOrEqual(390);
    // The transport bar stays in reach at the bottom of every tab.
    await page.evaluate(() => window.scrollTo(0, document.documentElement.scrollHeight));
    await expect(page.getByTestId('start')).toBeInViewport();
    await expect(page.getByTestId('stop')).toBeInViewport();
    await expect(page.getByTestId('run-status')).toBeInViewport();
  }
  testInfo.annotations.push({ type: 'tab heights (px)', description: JSON.stringify(heights) });
  for (const [tab, h] of Object.entries(heights)) expect(h, tab).toBeLessThan(2600);
  // Only the chosen tab's panels are shown.
  await page.getByTestId('tab-charts').click();
  await expect(page.getByTestId('chart-actor/entropy_loss')).toBeVisible();
  await expect(page.getByTestId('preset-select')).toBeHidden();
  await saveScreenshot(page, testInfo, 'phone-charts-tab');
  expect(errors).toEqual([]);
});
