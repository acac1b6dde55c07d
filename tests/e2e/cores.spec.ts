// Issue #14 (every core, browser half): the served page is cross-origin isolated (the preview server sends COOP and
// COEP, as the README asks of a static host), and a run with a helper worker on a second core (`workers=2`) trains
// the same first step as a run on one core (`workers=1`): same seed, same metrics, as `ragen train --workers` in Node.
import { expect, test, type Page } from '@playwright/test';
import { expectWorkingMatmul, watchErrors } from './helpers';

/** One step of a small bandit-tiny run: 4 env groups x 2 rollouts (PPO, so the critic also runs on the helper). */
const ONE_STEP = 'preset=bandit-tiny&groups=4&groupSize=2&val=2&steps=1&seed=5&backend=wasm';

type Row = Record<string, unknown>;

/** The step-1 metrics row of the newest stored run, read from the page's IndexedDB (what the charts draw). */
async function newestRunStep1(page: Page): Promise<Row | null> {
  return page.evaluate(async () => {
    const db = await new Promise<IDBDatabase>((resolve, reject) => {
      const req = indexedDB.open('ragen-playground');
      req.onsuccess = () => resolve(req.result);
      req.onerror = () => reject(req.error);
    });
    const all = <T>(store: string) =>
      new Promise<T[]>((resolve, reject) => {
        const req = db.transaction(store).objectStore(store).getAll();
        req.onsuccess = () => resolve(req.result as T[]);
        req.onerror = () => reject(req.error);
      });
    const runs = (await all<{ id: string; createdAt: number }>('runs')).sort((a, b) => b.createdAt - a.createdAt);
    const rows = await all<{ runId: string; step: number; row: Record<string, unknown> }>('metrics');
    db.close();
    return rows.find((r) => r.runId === runs[0]?.id && r.step === 1)?.row ?? null;
  });
}

/** Trains one step with `workers` cores and returns its metrics row. */
async function trainOneStep(page: Page, workers: 1 | 2): Promise<Row> {
  const errors = watchErrors(page);
  await page.goto(`./?${ONE_STEP}&workers=${workers}`);
  await expect(page.getByTestId('backend'), `page errors: ${errors.join(' | ')}`).toHaveText('wasm');
  await expectWorkingMatmul(page);
  await page.getByTestId('start').click();
  await expect(page.getByTestId('run-status'), `page errors: ${errors.join(' | ')}`).toHaveText('done', {
    timeout: 150_000,
  });
  await expect(page.getByTestId('training-error')).toHaveCount(0);
  await expect(page.getByTestId('cores-in-use')).toHaveText(String(workers));
  // The page stores the row as it arrives; wait for the write rather than race it.
  let row: Row | null = null;
  await expect
    .poll(async () => (row = await newestRunStep1(page)) !== null, { message: 'step-1 metrics in IndexedDB' })
    .toBe(true);
  return row!;
}

/** A metrics row without its timings (wall-clock, so never equal twice). */
const withoutTimings = (row: Row) =>
  Object.fromEntries(Object.entries(row).filter(([k]) => !k.startsWith('timing_s/') && k !== 'perf/throughput'));

test('cores: the page is cross-origin isolated, and a helper worker trains the same first step as one core', async ({
  page,
}) => {
  test.setTimeout(360_000);
  const response = await page.goto('./');
  expect(response?.headers()['cross-origin-opener-policy']).toBe('same-origin');
  expect(response?.headers()['cross-origin-embedder-policy']).toBe('require-corp');
  expect(await page.evaluate(() => self.crossOriginIsolated)).toBe(true);
  await expect(page.getByTestId('isolation-status')).toHaveAttribute('data-isolated', 'true');

  const one = await trainOneStep(page, 1);
  const two = await trainOneStep(page, 2);
  expect(one['step']).toBe(1);
  // Something was learned from (a run that did nothing would also match itself).
  expect(Number(one['actor/grad_norm'])).toBeGreaterThan(0);
  expect(withoutTimings(two)).toEqual(withoutTimings(one));
});

test('cores: served without COOP/COEP, the page says it is not isolated and still trains on two cores', async ({
  page,
}) => {
  test.setTimeout(240_000);
  // A static host that cannot set headers: every response arrives without the two isolation headers.
  await page.route('**/*', async (route) => {
    const response = await route.fetch();
    const headers = { ...response.headers() };
    delete headers['cross-origin-opener-policy'];
    delete headers['cross-origin-embedder-policy'];
    await route.fulfill({ response, headers });
  });
  const row = await trainOneStep(page, 2);
  expect(await page.evaluate(() => self.crossOriginIsolated)).toBe(false);
  const status = page.getByTestId('isolation-status');
  await expect(status).toHaveAttribute('data-isolated', 'false');
  await expect(status).toContainText('not cross-origin isolated');
  await expect(status).toContainText('no multi-threaded wasm');
  expect(Number(row['actor/grad_norm'])).toBeGreaterThan(0);
});

test('cores: the cores select writes the URL, and a bad workers value is named on its field', async ({ page }) => {
  await page.goto('./?workers=3');
  await expect(page.getByTestId('error-workers')).toContainText(
    "cores (URL parameter 'workers') must be 1, 2 or auto, not '3'",
  );
  await expect(page.getByTestId('workers-select')).toHaveValue('auto');
  await page.getByTestId('workers-select').selectOption('1');
  await expect(page.getByTestId('error-workers')).toHaveCount(0);
  expect(new URL(page.url()).searchParams.get('workers')).toBe('1');
  await page.getByTestId('workers-select').selectOption('auto');
  expect(new URL(page.url()).searchParams.has('workers')).toBe(false);
});
