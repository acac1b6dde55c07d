// The README's screenshots of the playground: 1440 px (a laptop) and 390 px (a phone) wide, before a run and during
// one (bandit-tiny on wasm, a few steps in); and of the classroom lesson on a 1280 x 720 projector, with the recorded
// lesson loaded, and of the mechanism lesson (`?lesson=echo-trap-frozenlake`) the same way. Run after `npm run build`:
//   npx tsx tools/screenshots.ts [--out docs/screenshots] [--only playground|lesson|mechanism]
// It serves dist/ with `vite preview` on a spare port and drives Debian's Chromium. Each PNG is one screen (the
// viewport, not the whole page), which keeps them small and shows what a visitor sees first.
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { chromium, type Page } from '@playwright/test';
import { CHROMIUM_ARGS, CHROMIUM_PATH } from '../tests/e2e/chromium';

const outDir = process.argv.includes('--out') ? process.argv[process.argv.indexOf('--out') + 1] : 'docs/screenshots';
const only = process.argv.includes('--only') ? process.argv[process.argv.indexOf('--only') + 1] : null;
if (only !== null && only !== 'playground' && only !== 'lesson' && only !== 'mechanism') {
  console.error(`tools/screenshots.ts: --only takes playground, lesson or mechanism, not '${only}'`);
  process.exit(2);
}
const PORT = 4391;
const base = `http://127.0.0.1:${PORT}/`;

if (!fs.existsSync('dist/index.html')) {
  console.error('tools/screenshots.ts: no dist/ build: run `npm run build` first');
  process.exit(2);
}
fs.mkdirSync(outDir, { recursive: true });

const server = spawn(
  process.execPath,
  ['node_modules/vite/bin/vite.js', 'preview', '--host', '127.0.0.1', '--port', String(PORT), '--strictPort'],
  {
    stdio: 'ignore',
  },
);

async function waitForServer(): Promise<void> {
  for (let i = 0; i < 100; i++) {
    try {
      if ((await fetch(base)).ok) return;
    } catch {
      // not up yet
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`vite preview did not answer on ${base}`);
}

/** Writes what the viewport shows as a PNG. */
async function shoot(page: Page, name: string): Promise<void> {
  const file = path.join(outDir, `${name}.png`);
  await page.screenshot({ path: file });
  console.log(`${file}: ${Math.round(fs.statSync(file).size / 1024)} kB`);
}

try {
  await waitForServer();
  const browser = await chromium.launch({ executablePath: CHROMIUM_PATH, args: [...CHROMIUM_ARGS] });
  for (const [width, height, label] of only === 'lesson' || only === 'mechanism'
    ? []
    : ([
        [1440, 900, '1440'],
        [390, 844, '390'],
      ] as const)) {
    const context = await browser.newContext({ viewport: { width, height } });
    const page = await context.newPage();
    await page.goto(`${base}?backend=wasm`);
    await page.getByTestId('matmul-check').and(page.locator('[data-status="pass"]')).waitFor({ timeout: 60_000 });
    // Before a run: what a first visit looks like, explainer included.
    await shoot(page, `playground-${label}-before`);
    await page.getByTestId('explainer-dismiss').click();
    await page.getByTestId('start').click();
    // During a run: a few steps in, caught in the middle of a step's rollout.
    await page.waitForFunction(
      () =>
        Number(document.querySelector('[data-testid="step-count"]')!.textContent) >= 4 &&
        (document.querySelector('[data-testid="step-progress"]') as HTMLElement).dataset.phase === 'rollout',
      null,
      { timeout: 600_000, polling: 50 },
    );
    // What the visitor sees after Start: on the laptop Start brought the charts into view; on the phone it opened the
    // Charts tab.
    await shoot(page, `playground-${label}-during`);
    await page.getByTestId('stop').click();
    await context.close();
  }
  // The reasoning shot: one board early and late (the outcome lesson), several boards at one step (the mechanism's
  // template).
  const lessons = [
    { name: 'lesson', query: 'lesson', prefix: 'lesson-1280', reasoning: 'reasoning-compare' },
    {
      name: 'mechanism',
      query: 'lesson=echo-trap-frozenlake',
      prefix: 'lesson-mechanism-1280',
      reasoning: 'template-compare',
    },
  ];
  for (const lesson of lessons.filter((l) => only === null || only === l.name)) {
    // The classroom lesson as a projector shows it: the top (what to watch), the charts, the reasoning side by side.
    const context = await browser.newContext({ viewport: { width: 1280, height: 720 } });
    const page = await context.newPage();
    await page.goto(`${base}?${lesson.query}&backend=wasm`);
    await page.getByTestId('lesson-start').and(page.locator(':enabled')).waitFor({ timeout: 60_000 }); // the backend is up
    await page.getByTestId('lesson-recorded').click();
    await page.getByTestId('lesson-source').waitFor();
    // The click brought the charts into view; the top (what to watch) first.
    await page.evaluate(() => window.scrollTo(0, 0));
    await shoot(page, `${lesson.prefix}-top`);
    await page.locator('[aria-label="Charts"]').evaluate((el) => el.scrollIntoView());
    await shoot(page, `${lesson.prefix}-charts`);
    await page
      .getByTestId(lesson.reasoning)
      .first()
      .evaluate((el) => el.scrollIntoView());
    await shoot(page, `${lesson.prefix}-reasoning`);
    await context.close();
  }
  await browser.close();
} finally {
  server.kill();
}
