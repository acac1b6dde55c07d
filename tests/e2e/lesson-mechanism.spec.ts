// The mechanism lesson (`?lesson=echo-trap-frozenlake`, issue 34 item 2): RAGEN-2's input-dependence signal on the
// charts next to success, for both arms, from the recording that ships with the site; a live lesson measures it from
// step 1; the two lessons link to each other, and a mistyped lesson name says so. Expectations are read from the
// recording's files on disk (public/lessons/echo-trap-frozenlake/), not restated here.
import { readFileSync } from 'node:fs';
import { expect, test } from '@playwright/test';
import { resolvePreset } from '../../src/starpo/presets';
import { formatValue, INPUT_DEPENDENCE_KEY } from '../../src/ui/charts';
import { parseLessonManifest } from '../../src/ui/lesson';
import { lastValue, seedCurves } from '../../src/ui/freshSeedCurves';
import { lessonCount, parseFreshSeedTable } from '../../src/ui/lessonRobustness';
import { lowContrastText, saveScreenshot, watchErrors } from './helpers';

const PRESET = 'echo-trap-frozenlake';
const RECORDING = new URL(`../../public/lessons/${PRESET}/`, import.meta.url);
const manifest = parseLessonManifest(
  JSON.parse(readFileSync(new URL('manifest.json', RECORDING), 'utf8')),
  'manifest.json',
);
const jsonl = (file: string) =>
  readFileSync(new URL(file, RECORDING), 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as Record<string, unknown> & { step: number });
/** Each recorded arm's MI measurements, [step, nats]. */
const miSeries = manifest.arms.map((arm) => ({
  name: arm.name,
  points: jsonl(arm.metrics)
    .filter((r) => typeof r[INPUT_DEPENDENCE_KEY] === 'number')
    .map((r) => [r.step, r[INPUT_DEPENDENCE_KEY] as number] as const),
}));
const MI_CHART = `chart-${INPUT_DEPENDENCE_KEY}`;

test("lesson-recorded (mechanism): the MI chart holds both arms, each ending at its recording's last measurement", async ({
  page,
}, testInfo) => {
  const errors = watchErrors(page);
  await page.goto(`./?lesson=${PRESET}&backend=wasm`);
  await expect(page.locator('h1')).toHaveText('The Echo Trap: the mechanism');
  await expect(page.getByTestId('lesson-summary')).toHaveText(resolvePreset(PRESET).summary);
  await expect(page.getByTestId('lesson-watch')).toContainText('input dependence');
  // Before any data, the chart is already there: the preset measures the MI.
  await expect(page.getByTestId(MI_CHART)).toBeVisible();
  await page.getByTestId('lesson-recorded').click();
  await expect(page.getByTestId('lesson-source')).toHaveAttribute('data-source', 'recorded');
  const chart = page.getByTestId(MI_CHART);
  await expect(chart).toHaveAttribute('data-runs', String(manifest.runs?.length ?? manifest.arms.length));
  // The chart comes right after success, before the reward std.
  const order = await page
    .locator('figure[data-testid^="chart-"]')
    .evaluateAll((els) => els.map((e) => e.getAttribute('data-testid')));
  expect(order.slice(0, 3)).toEqual(['chart-train/FrozenLake/success', MI_CHART, 'chart-rollout/in_group_std']);
  // Each arm's legend value is its last recorded measurement (the page reads the same files).
  for (const arm of miSeries) {
    expect(arm.points.length, `${arm.name} measured the MI every few steps`).toBeGreaterThan(10);
    const last = arm.points[arm.points.length - 1][1];
    const value = chart.locator(
      `[data-testid="chart-series"][data-arm="${arm.name}"] [data-testid="chart-series-value"]`,
    );
    await expect(value).toHaveText(formatValue(last));
  }
  await saveScreenshot(page, testInfo, 'lesson-mechanism');
  expect(errors).toEqual([]);
});

/** Distinct first-turn reasonings among the distinct boards a recorded arm logged at `step` (both splits). */
function distinctAt(arm: string, step: number): { boards: number; distinct: number } {
  const file = manifest.arms.find((a) => a.name === arm)!.rollouts;
  const boards = new Map<string, string>();
  for (const r of jsonl(file).filter((r) => r.step === step)) {
    const first = (r.turns as { state: string; think: string }[])[0];
    const key = `${r.split}|${first.state}`;
    if (!boards.has(key)) boards.set(key, first.think.trim());
  }
  return { boards: boards.size, distinct: new Set(boards.values()).size };
}

test("lesson-recorded (mechanism): different boards at one step show vanilla's template and StarPO-S reading each board", async ({
  page,
}) => {
  await page.goto(`./?lesson=${PRESET}&backend=wasm`);
  await page.getByTestId('lesson-recorded').click();
  await expect(page.getByTestId('lesson-source')).toHaveAttribute('data-source', 'recorded');
  const step = 120; // vanilla's MI is 0 from step 115 of the recording (seed 607), before its collapse at step 143
  const [vanilla, stabilised] = ['starpo', 'starpo-s'].map((arm) => distinctAt(arm, step));
  expect(vanilla.distinct, `the recording shows the template at step ${step}`).toBe(1);
  expect(vanilla.boards).toBeGreaterThan(3);
  expect(stabilised.distinct).toBeGreaterThan(1);
  for (const [arm, want] of [
    ['starpo', vanilla],
    ['starpo-s', stabilised],
  ] as const) {
    const view = page.locator(`[data-testid="template-compare"][data-arm="${arm}"]`);
    await view.getByTestId('template-step').selectOption(String(step));
    await expect(view).toHaveAttribute('data-step', String(step));
    await expect(view).toHaveAttribute('data-boards', String(want.boards));
    await expect(view).toHaveAttribute('data-distinct', String(want.distinct));
    await expect(view.getByTestId('template-board')).toHaveCount(want.boards);
  }
  await expect(
    page.locator('[data-testid="template-compare"][data-arm="starpo"] [data-testid="template-count"]'),
  ).toContainText('one template');
});

test('lesson (mechanism): projector sizes for the template view, AA contrast, and no wider than a phone', async ({
  page,
}) => {
  await page.setViewportSize({ width: 1280, height: 720 });
  await page.goto(`./?lesson=${PRESET}&backend=wasm`);
  await page.getByTestId('lesson-recorded').click();
  await expect(page.getByTestId('template-think').first()).toBeVisible();
  const px = await page
    .getByTestId('template-think')
    .first()
    .evaluate((e) => parseFloat(getComputedStyle(e).fontSize));
  expect(px).toBeGreaterThanOrEqual(18);
  expect(await lowContrastText(page)).toEqual([]);
  await page.setViewportSize({ width: 390, height: 844 });
  await expect.poll(() => page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
});

test('lesson (mechanism): the two lessons link to each other, and an unknown lesson name is one line naming the lessons', async ({
  page,
}) => {
  await page.goto(`./?lesson=${PRESET}&backend=wasm`);
  await expect(page.getByTestId('lesson-other')).toHaveAttribute('data-preset', 'echo-trap');
  await page.getByTestId('lesson-other').click();
  await expect(page.locator('h1')).toHaveText('The Echo Trap');
  await expect(page.getByTestId(MI_CHART)).toHaveCount(0);
  await expect(page.getByTestId('lesson-other')).toHaveAttribute('data-preset', PRESET);
  await page.goto('./?lesson=echo-trap-frozen&backend=wasm');
  await expect(page.getByTestId('lesson-link-error')).toHaveText(
    "there is no lesson 'echo-trap-frozen' (lessons: echo-trap, echo-trap-frozenlake); showing “The Echo Trap”.",
  );
  await expect(page.locator('h1')).toHaveText('The Echo Trap');
});

test("lesson-start (mechanism): both arms train live, and each arm's step-1 MI is the recording's", async ({
  page,
}) => {
  test.setTimeout(300_000);
  // runs=1: one run per arm, the recording's seed.
  await page.goto(`./?lesson=${PRESET}&backend=wasm&steps=1&runs=1`);
  await expect(page.getByTestId('lesson-start')).toBeEnabled({ timeout: 60_000 });
  await page.getByTestId('lesson-start').click();
  const chart = page.getByTestId(MI_CHART);
  await expect(chart).toHaveAttribute('data-runs', '2', { timeout: 240_000 });
  await expect(page.getByTestId('lesson-estimate')).toHaveAttribute('data-source', 'done', { timeout: 240_000 });
  // The live default is the recording's seed: step 1 replays the recording's step 1 (same backend, same seed).
  for (const arm of miSeries) {
    const [step, nats] = arm.points[0];
    expect(step).toBe(1);
    await expect(
      chart.locator(`[data-testid="chart-series"][data-arm="${arm.name}"] [data-testid="chart-series-value"]`),
    ).toHaveText(formatValue(nats));
  }
});

test('lesson (mechanism): the fresh-seed table judges the mechanism, with the MI columns', async ({ page }) => {
  const shipped = parseFreshSeedTable(JSON.parse(readFileSync(new URL('fresh-seeds.json', RECORDING), 'utf8')));
  await page.goto(`./?lesson=${PRESET}&backend=wasm`);
  const box = page.getByTestId('lesson-robustness');
  await expect(box).toHaveAttribute('data-criteria', 'mechanism');
  await expect(box).toHaveAttribute('data-shown', String(lessonCount(shipped)));
  await box.locator('summary').click();
  await expect(page.getByTestId('robustness-row')).toHaveCount(shipped.rows.length);
  const first = shipped.rows[0];
  const nats = (v: number | null | undefined) => (v === null || v === undefined ? '–' : v.toFixed(2));
  await expect(page.getByTestId('robustness-mi-vanilla').first()).toHaveText(
    `${nats(first.mi?.vanillaEarly)} → ${nats(first.mi?.vanillaLate)}`,
  );
});

test("lesson (mechanism): every fresh seed at once, MI and success, each arm's mean ending where the table's curves end", async ({
  page,
}, testInfo) => {
  const errors = watchErrors(page);
  const shipped = parseFreshSeedTable(JSON.parse(readFileSync(new URL('fresh-seeds.json', RECORDING), 'utf8')));
  await page.goto(`./?lesson=${PRESET}&backend=wasm`);
  const box = page.getByTestId('lesson-robustness');
  await expect(box).toHaveAttribute('data-criteria', 'mechanism');
  // Drawn only once the details are open.
  await expect(page.getByTestId('fresh-seed-curves')).toHaveCount(0);
  await box.locator('summary').click();
  const charts = page.getByTestId('fresh-seed-curves');
  await expect(charts).toHaveCount(2);
  for (const metric of ['mi', 'success'] as const) {
    const curves = seedCurves(shipped, metric)!;
    const chart = page.locator(`[data-testid="fresh-seed-curves"][data-metric="${metric}"]`);
    await expect(chart).toHaveAttribute('data-seeds', String(shipped.rows.length));
    await expect(chart).toHaveAttribute('data-curves', String(2 * shipped.rows.length));
    await expect(chart).toHaveAttribute('data-final-mean-vanilla', formatValue(lastValue(curves.mean.vanilla)));
    await expect(chart).toHaveAttribute('data-final-mean-starpo-s', formatValue(lastValue(curves.mean.starpoS)));
    await expect(chart.locator('canvas')).toHaveCount(1);
    expect((await chart.locator('canvas').boundingBox())!.width).toBeGreaterThan(200);
  }
  await saveScreenshot(page, testInfo, 'lesson-mechanism-fresh-seeds');
  // On a small phone (320 px, narrower than a chart's preferred 22rem column) the charts stack and each fits the screen.
  await page.setViewportSize({ width: 320, height: 640 });
  for (const metric of ['mi', 'success']) {
    const chart = page.locator(`[data-testid="fresh-seed-curves"][data-metric="${metric}"]`);
    await expect
      .poll(async () => {
        const b = (await chart.boundingBox())!;
        return b.x + b.width;
      })
      .toBeLessThanOrEqual(320);
  }
  expect(errors).toEqual([]);
});
