// The classroom page: the recorded Echo Trap lesson that ships with the site loads at once, every run of each arm thin
// and its mean thick in one colour per arm on every chart, the early-warning markers where the recording's own metrics
// fired, and the count in words; the live lesson trains several runs per arm in workers; the same board's reasoning
// shows side by side at an early and a late step.
// Expectations are read from the recording's files on disk (public/lessons/echo-trap/), not restated here.
import { readFileSync } from 'node:fs';
import { expect, test, type Page } from '@playwright/test';
import { resolvePreset } from '../../src/starpo/presets';
import { writeTar } from '../../src/ui/tar';
import { formatValue } from '../../src/ui/charts';
import { lastValue, seedCurves } from '../../src/ui/freshSeedCurves';
import { parseLessonManifest } from '../../src/ui/lesson';
import { parseMetricsJsonl } from '../../src/metrics/jsonl';
import { EMPTY_REASONING, LESSON_IF_NOT_SHOWN } from '../../src/ui/lesson-text';
import { armCountsOf, lessonCount, parseFreshSeedTable } from '../../src/ui/lessonRobustness';
import { lessonCount as runsCount, LESSON_RUNS_PER_ARM, stepsWithoutUpdate } from '../../src/ui/lessonRuns';
import { LESSON_CAPTIONS } from '../../src/ui/lesson-captions';
import { lowContrastText, saveScreenshot, watchErrors } from './helpers';

/** The chart cards (their test id is `chart-<metric key>`; legend entries' ids also start with `chart-`). */
const CHARTS = 'figure[data-testid^="chart-"]';
const RECORDING = new URL('../../public/lessons/echo-trap/', import.meta.url);
const manifest = parseLessonManifest(
  JSON.parse(readFileSync(new URL('manifest.json', RECORDING), 'utf8')),
  'manifest.json',
);
const jsonl = (file: string) =>
  readFileSync(new URL(file, RECORDING), 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as Record<string, unknown> & { step: number });
const recorded = manifest.arms.map((arm) => ({
  name: arm.name,
  rows: jsonl(arm.metrics),
  rollouts: jsonl(arm.rollouts),
}));
/** Every run of the recording (one per arm in a recording of one seed). */
const recordedRuns = (manifest.runs ?? manifest.arms.map((a) => ({ ...a, seed: manifest.seed }))).map((r) => ({
  arm: r.name,
  seed: r.seed,
  rows: parseMetricsJsonl(readFileSync(new URL(r.metrics, RECORDING), 'utf8')),
  over: true,
}));
/** The steps each arm's recorded runs warned at, and the middle one (where the page puts the arm's ⚠). */
const warningsOf = (runs: typeof recordedRuns) =>
  ['starpo', 'starpo-s'].map((arm) => {
    const mine = runs.filter((r) => r.arm === arm);
    const steps = mine
      .map((r) => firedAt(r.rows))
      .filter((s): s is number => s !== null)
      .sort((a, b) => a - b);
    return {
      arm,
      runs: mine.length,
      steps,
      median: steps.length > 0 ? steps[Math.floor((steps.length - 1) / 2)] : null,
    };
  });

/** Where the Trainer's early warning fired in a recorded arm: the first step with echo_trap/warning = 1. */
const firedAt = (rows: { step: number; [k: string]: unknown }[]) =>
  rows.find((r) => r['echo_trap/warning'] === 1)?.step ?? null;

async function loadRecorded(page: Page): Promise<void> {
  await page.goto('./?lesson&backend=wasm');
  await page.getByTestId('lesson-recorded').click();
  await expect(page.getByTestId('lesson-source')).toHaveAttribute('data-source', 'recorded');
}

/** Every chart, series and swatch of the charts panel tagged with an arm: arm -> the colours it was drawn in. */
async function coloursByArm(page: Page): Promise<Map<string, Set<string>>> {
  const tagged = await page
    .locator('[aria-label="Charts"] [data-arm][data-colour]')
    .evaluateAll((els) =>
      els.map((e) => ({ arm: e.getAttribute('data-arm')!, colour: e.getAttribute('data-colour')! })),
    );
  const colours = new Map<string, Set<string>>();
  for (const t of tagged) colours.set(t.arm, (colours.get(t.arm) ?? new Set()).add(t.colour));
  return colours;
}

test('lesson-recorded: both arms load at once, one colour per arm on every chart, markers where the recording fired', async ({
  page,
}, testInfo) => {
  const errors = watchErrors(page);
  await page.goto('./?lesson&backend=wasm');
  // The preset's own summary says what will happen (src/starpo/presets.ts, shown as it is).
  await expect(page.getByTestId('lesson-summary')).toHaveText(resolvePreset('echo-trap').summary);
  await expect(page.getByTestId('lesson-watch')).toContainText('the 8 answers to each question agree more and more');
  await expect(page.getByTestId('lesson-watch')).toContainText('is in the table below');
  const started = Date.now();
  // Before anything: how long a live lesson takes, from the recording's own timings.
  await expect(page.getByTestId('lesson-estimate')).toHaveAttribute('data-source', 'recording');
  await page.getByTestId('lesson-recorded').click();
  await expect(page.getByTestId('lesson-source')).toHaveAttribute('data-source', 'recorded');
  expect(Date.now() - started, 'the recording loads without training').toBeLessThan(10_000);
  // The click brought the charts into view.
  await expect(page.locator('#charts')).toBeInViewport();
  // The class sees the recording; how it was made (commit, command) is folded away for whoever remakes it.
  await expect(page.getByTestId('lesson-source')).not.toContainText(manifest.commit.slice(0, 7));
  const provenance = page.getByTestId('lesson-provenance');
  await provenance.locator('summary').click();
  await expect(provenance).toContainText(manifest.commit.slice(0, 7));
  await expect(provenance).toContainText(manifest.command);
  await expect(page.getByTestId('lesson-error')).toHaveCount(0);

  const charts = page.locator(CHARTS);
  const keys = await charts.evaluateAll((els) => els.map((e) => e.getAttribute('data-testid')!.slice('chart-'.length)));
  expect(keys).toEqual([
    'train/Bandit/success',
    'rollout/in_group_std',
    'actor/entropy_loss',
    'actor/grad_norm',
    'reasoning_length/mean',
  ]);
  const arms = recorded.map((a) => a.name);
  expect(arms).toEqual(['starpo', 'starpo-s']);
  for (const key of keys) {
    const chart = page.getByTestId(`chart-${key}`);
    // Both arms' means in the legend of every chart; every run drawn, over every step some run logged the metric.
    for (const arm of arms)
      await expect(chart.locator(`[data-testid="chart-series"][data-arm="${arm}"]`), `${key} ${arm}`).toHaveCount(1);
    await expect(chart, key).toHaveAttribute('data-runs', String(recordedRuns.length));
    const logged = recordedRuns.flatMap((r) =>
      r.rows.filter((row) => typeof row[key] === 'number' && Number.isFinite(row[key])).map((row) => row.step),
    );
    await expect(chart, key).toHaveAttribute('data-points', String(new Set(logged).size));
    // The caption is the lesson's (its claims are checked against this recording by tests/unit/ui/lesson-captions.test.ts).
    await expect(chart.locator('.watch')).toHaveText(LESSON_CAPTIONS['echo-trap'].find((c) => c.key === key)!.text);
    // Every y axis labelled; success on a fixed 0-1 axis.
    expect((await chart.getAttribute('data-y-label'))!.length, `${key} y label`).toBeGreaterThan(3);
    if (key.endsWith('/success')) await expect(chart).toHaveAttribute('data-y-scale', '0,1');
  }
  // One colour per arm across every chart (series, swatches, legend), and the two arms' colours differ.
  const colours = await coloursByArm(page);
  expect([...colours.keys()].sort()).toEqual(arms);
  for (const arm of arms) expect(colours.get(arm)!.size, `${arm}: ${[...colours.get(arm)!]}`).toBe(1);
  expect([...colours.get('starpo')!][0]).not.toBe([...colours.get('starpo-s')!][0]);

  // The early-warning markers: one per arm whose runs warned, at the middle of the steps the recording's own metrics
  // say they fired at (none if no run did).
  const fired = warningsOf(recordedRuns).filter((w) => w.median !== null);
  await expect(page.getByTestId('echo-trap-warning')).toHaveCount(fired.length > 0 ? 1 : 0);
  // The page says so when the recording shows no warning at all, rather than leave the class waiting for one.
  await expect(page.getByTestId('lesson-no-warning')).toHaveCount(fired.length > 0 ? 0 : 1);
  for (const key of keys) {
    const markers = page.getByTestId(`chart-${key}`).getByTestId('echo-trap-marker');
    await expect(markers, key).toHaveCount(fired.length);
    for (const f of fired)
      await expect(markers.and(page.locator(`[data-arm="${f.arm}"]`))).toHaveAttribute('data-step', String(f.median));
  }
  for (const f of fired)
    await expect(page.getByTestId('echo-trap-warning')).toContainText(
      `${f.arm}: in ${f.steps.length} of ${f.runs} run${f.runs === 1 ? '' : 's'}, at step${f.steps.length === 1 ? '' : 's'} ${f.steps.join(', ')}.`,
    );
  // The count in words, by the shared verdict; StarPO-S's steps without an update, counted.
  await expect(page.getByTestId('lesson-count')).toHaveText(`${runsCount(recordedRuns, 'starpo').sentence}.`);
  const idle = recordedRuns
    .filter((r) => r.arm === 'starpo-s')
    .reduce((n, r) => n + stepsWithoutUpdate(r.rows).count, 0);
  if (idle > 0) {
    await expect(page.getByTestId('lesson-no-update')).toHaveAttribute('data-steps', String(idle));
    await expect(page.getByTestId('lesson-no-update')).toContainText('every question’s answers agreed');
  } else await expect(page.getByTestId('lesson-no-update')).toHaveCount(0);
  // The numbers behind the count, one click away.
  const runsTable = page.getByTestId('lesson-runs-table');
  await runsTable.locator('summary').click();
  await expect(runsTable.locator('tbody tr')).toHaveCount(recordedRuns.length);
  expect(errors, errors.join(' | ')).toEqual([]);
  await saveScreenshot(page, testInfo, 'lesson-recorded');
});

test("lesson-recorded: a warning in the recorded metrics is a marker in its arm's colour on every lesson chart", async ({
  page,
}) => {
  // The shipped recording with the Trainer's warning keys set from step 12 on in the starpo arm, and cleared before it
  // (as a run whose detector fired there logs them), served in place of the file: the page must mark step 12.
  const starpo = manifest.arms.find((a) => a.name === 'starpo')!;
  // The recording's first run of each arm only, so the arm's ⚠ is that run's.
  const { runs: _runs, ...oneSeed } = manifest;
  await page.route('**/lessons/echo-trap/manifest.json', (route) =>
    route.fulfill({ contentType: 'application/json', body: JSON.stringify(oneSeed) }),
  );
  await page.route(`**/lessons/echo-trap/${starpo.metrics}`, (route) =>
    route.fulfill({
      contentType: 'application/jsonl',
      body:
        recorded[0].rows
          .map((r) =>
            JSON.stringify(
              r.step >= 12
                ? {
                    ...r,
                    'echo_trap/warning': 1,
                    'echo_trap/signal': 'reward_std+entropy',
                    'echo_trap/reward_std_ratio': 0.2,
                    'echo_trap/entropy_ratio': 0.25,
                  }
                : { ...r, 'echo_trap/warning': 0 },
            ),
          )
          .join('\n') + '\n',
    }),
  );
  await loadRecorded(page);
  const warning = page.getByTestId('echo-trap-warning');
  await expect(warning).toContainText('starpo: in 1 of 1 run, at step 12.');
  await expect(page.getByTestId('lesson-no-warning')).toHaveCount(0);
  const [colour] = (await coloursByArm(page)).get('starpo')!;
  for (const chart of await page.locator(CHARTS).all()) {
    // The starpo arm's marker (the recorded starpo-s arm may carry a warning of its own).
    const marker = chart.locator('[data-testid="echo-trap-marker"][data-arm="starpo"]');
    await expect(marker).toHaveCount(1);
    await expect(marker).toHaveAttribute('data-step', '12');
    await expect(marker).toHaveAttribute('data-colour', colour);
  }
});

test('lesson-recorded: a recording missing from the site is one line naming the file and how to make it', async ({
  page,
}) => {
  await page.route('**/lessons/echo-trap/manifest.json', (route) => route.fulfill({ status: 404, body: 'not found' }));
  await page.goto('./?lesson&backend=wasm');
  await page.getByTestId('lesson-recorded').click();
  await expect(page.getByTestId('lesson-error')).toHaveText(
    'lessons/echo-trap/manifest.json is not on this site (HTTP 404): record it with experiments/record-lesson.ts',
  );
  await expect(page.getByTestId('lesson-source')).toHaveCount(0);
  await expect(page.locator(`${CHARTS} canvas`)).toHaveCount(0);
});

test("lesson: the same board's reasoning side by side at an early and a late step, for each arm", async ({
  page,
}, testInfo) => {
  await loadRecorded(page);
  const compares = page.getByTestId('reasoning-compare');
  await expect(compares).toHaveCount(2);
  for (const arm of recorded) {
    const compare = page.locator(`[data-testid="reasoning-compare"][data-arm="${arm.name}"]`);
    // Validation replays the same seeds at every validation step: the first val seed, at its first and last step.
    const val = arm.rollouts.filter((r) => r.split === 'val');
    const seed = Math.min(...val.map((r) => r.seed as number));
    const steps = [...new Set(val.filter((r) => r.seed === seed).map((r) => r.step))].sort((a, b) => a - b);
    expect(steps.length, `${arm.name}: val steps of seed ${seed}`).toBeGreaterThanOrEqual(2);
    const [early, late] = [steps[0], steps.at(-1)!];
    await expect(compare).toHaveAttribute('data-seed', String(seed));
    const columns = compare.getByTestId('compare-column');
    await expect(columns).toHaveCount(2);
    await expect(columns.nth(0)).toHaveAttribute('data-step', String(early));
    await expect(columns.nth(1)).toHaveAttribute('data-step', String(late));
    for (const [i, step] of [early, late].entries()) {
      await expect(columns.nth(i)).toHaveAttribute('data-seed', String(seed));
      const record = val.find((r) => r.seed === seed && r.step === step)!;
      const thinks = (record.turns as { think: string }[]).map((t) => t.think || EMPTY_REASONING);
      await expect(columns.nth(i).getByTestId('compare-think')).toHaveText(thinks);
    }
    // Another late step of the same board, picked by hand.
    if (steps.length > 2) {
      await compare.getByTestId('compare-late').selectOption(String(steps[1]));
      await expect(columns.nth(1)).toHaveAttribute('data-step', String(steps[1]));
      const record = val.find((r) => r.seed === seed && r.step === steps[1])!;
      await expect(columns.nth(1).getByTestId('compare-think').first()).toHaveText(
        (record.turns as { think: string }[])[0].think || EMPTY_REASONING,
      );
    }
  }
  await page.locator('[data-testid="reasoning-compare"]').first().scrollIntoViewIfNeeded();
  await saveScreenshot(page, testInfo, 'lesson-reasoning');
});

test("playground: the rollout viewer also puts one board's reasoning at two steps side by side (an imported run)", async ({
  page,
}) => {
  // The recording's starpo arm as a run archive (metrics.jsonl + rollouts.jsonl), imported on the playground page.
  const arm = manifest.arms[0];
  const archive = writeTar(
    ['metrics', 'rollouts'].map((kind) => ({
      path: `${kind}.jsonl`,
      bytes: new Uint8Array(readFileSync(new URL(kind === 'metrics' ? arm.metrics : arm.rollouts, RECORDING))),
    })),
  );
  await page.goto('./?backend=wasm');
  await page
    .getByTestId('import-file')
    .setInputFiles({ name: 'starpo.tar', mimeType: 'application/x-tar', buffer: Buffer.from(archive) });
  const compare = page.getByTestId('rollout-viewer').getByTestId('reasoning-compare');
  const val = recorded[0].rollouts.filter((r) => r.split === 'val');
  const seed = Math.min(...val.map((r) => r.seed as number));
  const steps = [...new Set(val.filter((r) => r.seed === seed).map((r) => r.step))].sort((a, b) => a - b);
  await expect(compare).toHaveAttribute('data-seed', String(seed));
  await expect(compare.getByTestId('compare-column')).toHaveCount(2);
  await expect(compare.getByTestId('compare-column').nth(0)).toHaveAttribute('data-step', String(steps[0]));
  await expect(compare.getByTestId('compare-column').nth(1)).toHaveAttribute('data-step', String(steps.at(-1)));
  // Another board: the next validation seed, at its own steps.
  await compare.getByTestId('compare-prompt').selectOption({ index: 1 });
  await expect(compare).toHaveAttribute('data-seed', String(seed + 1));
  for (const column of await compare.getByTestId('compare-column').all())
    await expect(column).toHaveAttribute('data-seed', String(seed + 1));
});

test('lesson-start: one click trains every run of both arms in workers, counts them in words, and says how long it took', async ({
  page,
}, testInfo) => {
  test.setTimeout(420_000);
  const errors = watchErrors(page);
  // steps=2 caps the lesson for the test (the same URL knobs as the playground); a small batch keeps a step short.
  await page.goto('./?lesson&backend=wasm&steps=2&groups=4&groupSize=2&turns=1');
  await expect(page.getByTestId('backend')).toHaveText('wasm');
  await expect(page.getByTestId('lesson-backend')).toContainText('the processor');
  const start = page.getByTestId('lesson-start');
  await expect(start).toBeEnabled();
  await start.click();
  const chips = page.getByTestId('lesson-run');
  await expect(chips).toHaveCount(2 * LESSON_RUNS_PER_ARM);
  await expect(page.getByTestId('lesson-source')).toHaveAttribute('data-source', 'live');
  // While it trains: one time-left figure for the whole lesson.
  await expect(page.getByTestId('lesson-estimate')).toHaveAttribute('data-source', 'live', { timeout: 240_000 });
  await expect(page.getByTestId('lesson-estimate')).toHaveAttribute('data-source', 'done', { timeout: 360_000 });
  for (const chip of await chips.all()) await expect(chip).toHaveAttribute('data-phase', 'done');
  await expect(page.getByTestId('lesson-error'), errors.join(' | ')).toHaveCount(0);
  // Several runs at a time, each in a worker of its own (ended once the lesson is over).
  await expect(page.getByTestId('lesson-source')).toContainText(/Trained live on [2-4] workers/);
  // Every run on the charts, and the count of each arm's runs in words.
  await expect(page.getByTestId('chart-train/Bandit/success')).toHaveAttribute(
    'data-runs',
    String(2 * LESSON_RUNS_PER_ARM),
  );
  await expect(page.getByTestId('lesson-count')).toHaveAttribute('data-vanilla-runs', String(LESSON_RUNS_PER_ARM));
  await expect(page.getByTestId('lesson-count')).toHaveAttribute('data-starpo-s-runs', String(LESSON_RUNS_PER_ARM));
  await expect(page.getByTestId('lesson-count')).toContainText(`of ${LESSON_RUNS_PER_ARM}`);
  const colours = await coloursByArm(page);
  expect(colours.get('starpo')!.size).toBe(1);
  expect(colours.get('starpo-s')!.size).toBe(1);
  expect([...colours.get('starpo')!][0]).not.toBe([...colours.get('starpo-s')!][0]);
  await saveScreenshot(page, testInfo, 'lesson-live');
});

test('lesson: sized for a projector, readable (AA contrast), and no wider than a phone', async ({ page }, testInfo) => {
  await page.setViewportSize({ width: 1280, height: 720 });
  await loadRecorded(page);
  // Body text of the lesson (what to watch, chart legends, the reasoning) is at least 18 px; the playground's is 16.
  const sizes = await page.evaluate(() =>
    [
      '[data-testid="lesson-watch"] li',
      '[data-testid="chart-series"] .label',
      '.watch',
      '[data-testid="compare-think"]',
    ].map((sel) => [sel, parseFloat(getComputedStyle(document.querySelector(sel)!).fontSize)]),
  );
  for (const [sel, px] of sizes) expect(px, String(sel)).toBeGreaterThanOrEqual(18);
  // The charts' axis text (drawn on the canvas, so set in px) is at least 14 px, and so is every text on a chart card.
  for (const chart of await page.locator(CHARTS).all()) {
    expect(Number(await chart.getAttribute('data-axis-font-px'))).toBeGreaterThanOrEqual(14);
    const smallest = await chart.evaluate((el) =>
      Math.min(
        ...[...el.querySelectorAll('*')]
          .filter(
            (e) =>
              e.childNodes.length > 0 &&
              [...e.childNodes].some((n) => n.nodeType === 3 && n.textContent!.trim() !== '') &&
              (e as HTMLElement).offsetParent !== null,
          )
          .map((e) => parseFloat(getComputedStyle(e).fontSize)),
      ),
    );
    expect(smallest).toBeGreaterThanOrEqual(14);
  }
  // Two charts side by side on a 1280 px projector.
  const [a, b] = await page
    .locator(CHARTS)
    .evaluateAll((els) => els.slice(0, 2).map((e) => e.getBoundingClientRect().top));
  expect(a).toBe(b);
  expect(await lowContrastText(page)).toEqual([]);
  await page.setViewportSize({ width: 390, height: 844 });
  await expect.poll(() => page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
  await saveScreenshot(page, testInfo, 'lesson-390');
});

test('lesson: the fresh-seed table says how often the lesson showed on seeds nobody tuned it on', async ({ page }) => {
  const shipped = parseFreshSeedTable(JSON.parse(readFileSync(new URL('fresh-seeds.json', RECORDING), 'utf8')));
  await page.goto('./?lesson&backend=wasm');
  const box = page.getByTestId('lesson-robustness');
  await expect(box).toHaveAttribute('data-shown', String(lessonCount(shipped)));
  await expect(box).toContainText(`${lessonCount(shipped)} of ${shipped.rows.length}`);
  await box.locator('summary').click();
  const arms = armCountsOf(shipped);
  await expect(page.getByTestId('lesson-arm-rates')).toContainText(`${arms.vanilla} of ${arms.runs}`);
  await expect(page.getByTestId('lesson-arm-rates')).toContainText(`held in ${arms.starpoS} of ${arms.runs}`);
  const rows = page.getByTestId('robustness-row');
  await expect(rows).toHaveCount(shipped.rows.length);
  for (const [i, r] of shipped.rows.entries()) {
    await expect(rows.nth(i)).toHaveAttribute('data-seed', String(r.seed));
    await expect(rows.nth(i)).toHaveAttribute('data-lesson', String(r.failed.length === 0));
  }
  await expect(box).toContainText(LESSON_IF_NOT_SHOWN[0].slice(0, 40));
  // Every fresh seed at once: the success curves only (this lesson measures no MI), each arm's mean ending where the
  // table's curves end.
  const success = seedCurves(shipped, 'success')!;
  expect(seedCurves(shipped, 'mi')).toBeNull();
  const chart = page.getByTestId('fresh-seed-curves');
  await expect(chart).toHaveCount(1);
  await expect(chart).toHaveAttribute('data-metric', 'success');
  await expect(chart).toHaveAttribute('data-seeds', String(shipped.rows.length));
  await expect(chart).toHaveAttribute('data-curves', String(2 * shipped.rows.length));
  await expect(chart).toHaveAttribute('data-final-mean-vanilla', formatValue(lastValue(success.mean.vanilla)));
  await expect(chart).toHaveAttribute('data-final-mean-starpo-s', formatValue(lastValue(success.mean.starpoS)));
  await expect(chart.locator('canvas')).toHaveCount(1);
});
