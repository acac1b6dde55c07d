// Times the live lesson as a class would run it: opens `?lesson` in headless Chromium (Debian's, as the e2e tests do)
// on a built site, clicks "Train it live", and every few seconds reads the page's time-left figure and how many runs
// are over, until the lesson ends. Prints the total and, for each sample after the first minute, how far the figure
// was from the truth (the time the lesson then really took). Serve the build first:
//
//   npx vite build && npx vite preview --host 127.0.0.1 --port 4400 --strictPort &
//   npx tsx experiments/lab/time-live-lesson.ts [--url http://127.0.0.1:4400/] [--query 'lesson&backend=wasm'] [--json out.json]
import * as fs from 'node:fs';
import { chromium } from '@playwright/test';
import { Command } from 'commander';
import { CHROMIUM_ARGS, CHROMIUM_PATH } from '../../tests/e2e/chromium';

const flags = new Command()
  .option('--url <url>', 'the served site', 'http://127.0.0.1:4400/')
  .option('--query <q>', "the page's query string", 'lesson&backend=wasm')
  .option('--every <s>', 'seconds between samples', '10')
  .option('--json <file>', 'write the samples and the total here')
  .parse()
  .opts<{ url: string; query: string; every: string; json?: string }>();

const browser = await chromium.launch({ executablePath: CHROMIUM_PATH, args: [...CHROMIUM_ARGS], headless: true });
const page = await browser.newPage({ viewport: { width: 1280, height: 720 } });
await page.goto(`${flags.url}?${flags.query}`);
const start = page.getByTestId('lesson-start');
await start.waitFor();
await page.waitForFunction(
  () => !(document.querySelector('[data-testid="lesson-start"]') as HTMLButtonElement).disabled,
  null,
  { timeout: 120_000 },
);
const cores = await page.evaluate(() => navigator.hardwareConcurrency);
const backend = await page.getByTestId('backend').textContent();
const t0 = Date.now();
await start.click();
const samples: { t: number; left: number | null; over: string }[] = [];
for (;;) {
  await page.waitForTimeout(Number(flags.every) * 1000);
  const estimate = page.getByTestId('lesson-estimate');
  const source = await estimate.getAttribute('data-source');
  const t = (Date.now() - t0) / 1000;
  if (source === 'done') break;
  const left = await estimate.getAttribute('data-seconds-left');
  const over = await page
    .locator('[data-testid="lesson-run"][data-phase="done"], [data-testid="lesson-run"][data-phase="failed"]')
    .count();
  samples.push({
    t,
    left: left === null ? null : Number(left),
    over: `${over}/${await page.getByTestId('lesson-run').count()}`,
  });
  console.log(`${t.toFixed(0).padStart(5)} s  time left ${left ?? '-'} s  runs over ${samples.at(-1)!.over}`);
}
const total = Number(await page.getByTestId('lesson-estimate').getAttribute('data-seconds'));
const count = await page.getByTestId('lesson-count').textContent();
const runs = await page
  .getByTestId('lesson-run')
  .evaluateAll((els) =>
    els.map(
      (e) =>
        `${e.getAttribute('data-arm')} seed ${e.getAttribute('data-seed')}: ${e.getAttribute('data-phase')} at step ${e.getAttribute('data-step')}`,
    ),
  );
await browser.close();
const errors = samples
  .filter((s) => s.t >= 60 && s.left !== null)
  .map((s) => ({ t: s.t, error: (s.left! - (total - s.t)) / Math.max(1, total - s.t) }));
const worstOf = (xs: typeof errors) =>
  xs.reduce((w, e) => (Math.abs(e.error) > Math.abs(w.error) ? e : w), { t: 0, error: 0 });
const worst = worstOf(errors);
// In its last seconds the truth is a few seconds, and so is any error: the bar is judged while a minute is left.
const minuteLeft = errors.filter((e) => total - e.t >= 60);
const worstMinute = worstOf(minuteLeft);
console.log(`backend ${backend}, ${cores} cores: the lesson took ${total} s (${(total / 60).toFixed(1)} min)`);
console.log(count);
for (const r of runs) console.log(`  ${r}`);
console.log(
  `time left after the first minute: worst ${(worst.error * 100).toFixed(0)} % off the truth at ${worst.t.toFixed(0)} s (${errors.length} samples)`,
);
console.log(
  `  while at least a minute was left: worst ${(worstMinute.error * 100).toFixed(0)} % at ${worstMinute.t.toFixed(0)} s, mean ${((minuteLeft.reduce((a, e) => a + e.error, 0) / Math.max(1, minuteLeft.length)) * 100).toFixed(0)} % (${minuteLeft.length} samples)`,
);
if (flags.json)
  fs.writeFileSync(
    flags.json,
    JSON.stringify({ query: flags.query, backend, cores, total, count, runs, samples, errors }, null, 2) + '\n',
  );
