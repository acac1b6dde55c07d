// Steps per second of a tiny preset in headless Chromium with 1 and with 2 cores per run (the playground's
// `workers` setting: 2 adds a helper worker that rolls out half the env groups and trains the critic). Run after
// `npm run build`:
//   npx tsx tools/bench/browser-cores.ts [--preset bandit-tiny] [--steps 3] [--workers 1,2]
// It serves dist/ with `vite preview` (which sends the COOP/COEP headers), trains each setting once in a fresh page
// on wasm, and prints per setting: the wall time from Start to done, steps/s, the mean `timing_s/step` and its
// rollout / update parts from the run's metrics, the training step without the validation the run's last step does
// (comparable with `ragen bench --only step`), wall and CPU time per step after the first (that validation included),
// and the CPU time all of Chromium's processes used meanwhile (from
// /proc, this script's child processes: on a shared machine wall time alone says little). Not a test: it asserts nothing.
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import { chromium, type Page } from '@playwright/test';
import { CHROMIUM_ARGS, CHROMIUM_PATH } from '../../tests/e2e/chromium';

const arg = (name: string, fallback: string) =>
  process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1] : fallback;
const preset = arg('--preset', 'bandit-tiny');
const steps = Number(arg('--steps', '3'));
const settings = arg('--workers', '1,2').split(',');
if (!Number.isInteger(steps) || steps < 1) {
  console.error(`tools/bench/browser-cores.ts: --steps needs a whole number >= 1, not '${arg('--steps', '')}'`);
  process.exit(2);
}
if (!fs.existsSync('dist/index.html')) {
  console.error('tools/bench/browser-cores.ts: no dist/ build: run `npm run build` first');
  process.exit(2);
}
const PORT = 4392;
const base = `http://127.0.0.1:${PORT}/`;

/** CPU seconds (user + system) of a process's descendants (not itself), from /proc. */
function treeCpuSeconds(root: number): number {
  const ticksPerSecond = 100; // USER_HZ on Linux
  const children = new Map<number, number[]>();
  const own = new Map<number, number>();
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue; // exited meanwhile
    }
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const pid = Number(entry),
      ppid = Number(fields[1]);
    own.set(pid, (Number(fields[11]) + Number(fields[12])) / ticksPerSecond);
    children.set(ppid, [...(children.get(ppid) ?? []), pid]);
  }
  let total = -(own.get(root) ?? 0);
  const stack = [root];
  while (stack.length > 0) {
    const pid = stack.pop()!;
    total += own.get(pid) ?? 0;
    stack.push(...(children.get(pid) ?? []));
  }
  return total;
}

/**
 * Per-step metrics of the newest run in the page's IndexedDB. A string, not a function: tsx compiles nested arrow
 * functions with a `__name` helper that does not exist in the page.
 */
async function newestRunRows(page: Page): Promise<Record<string, number>[]> {
  return page.evaluate(`(async () => {
    const db = await new Promise((resolve, reject) => {
      const req = indexedDB.open('ragen-playground');
      req.onsuccess = () => resolve(req.result);
      req.onerror = () => reject(req.error);
    });
    const all = (store) => new Promise((resolve, reject) => {
      const req = db.transaction(store).objectStore(store).getAll();
      req.onsuccess = () => resolve(req.result);
      req.onerror = () => reject(req.error);
    });
    const runs = (await all('runs')).sort((a, b) => b.createdAt - a.createdAt);
    const rows = await all('metrics');
    db.close();
    return rows.filter((r) => r.runId === runs[0].id && r.step >= 1).map((r) => r.row);
  })()`);
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

const server = spawn(
  process.execPath,
  ['node_modules/vite/bin/vite.js', 'preview', '--host', '127.0.0.1', '--port', String(PORT), '--strictPort'],
  { stdio: 'ignore' },
);
try {
  for (let i = 0; i < 50; i++) {
    if (
      await fetch(base).then(
        (r) => r.ok,
        () => false,
      )
    )
      break;
    await new Promise((r) => setTimeout(r, 200));
  }
  const browser = await chromium.launch({ executablePath: CHROMIUM_PATH, args: [...CHROMIUM_ARGS] });
  // Chromium's processes (and the idle preview server) are this process's descendants.
  const browserPid = process.pid;
  console.log(`${preset}, ${steps} steps, wasm, headless Chromium, navigator.hardwareConcurrency and load below`);
  for (const workers of settings) {
    const page = await browser.newPage();
    await page.goto(`${base}?preset=${preset}&steps=${steps}&backend=wasm&workers=${workers}`);
    await page.locator('[data-testid="matmul-check"][data-status="pass"]').waitFor({ timeout: 120_000 });
    const cores = await page.evaluate(() => navigator.hardwareConcurrency);
    const load = fs.readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
    const cpu0 = treeCpuSeconds(browserPid);
    const t0 = performance.now();
    await page.getByTestId('start').click();
    // From the end of step 1 on, a step's cost without the run's start-up (model, helper, step-0 validation).
    await page
      .locator('[data-testid="step-count"]')
      .filter({ hasText: /^[1-9]\d*$/ })
      .waitFor({ timeout: 1_800_000 });
    const cpu1 = treeCpuSeconds(browserPid),
      t1 = performance.now();
    const stepsAfter1 = steps - Number(await page.getByTestId('step-count').textContent());
    await page
      .locator('[data-testid="run-status"]')
      .filter({ hasText: /^(done|failed)$/ })
      .waitFor({ timeout: 1_800_000 });
    const t2 = performance.now(),
      cpu2 = treeCpuSeconds(browserPid);
    const wall = (t2 - t0) / 1000;
    const cpu = cpu2 - cpu0;
    const later =
      stepsAfter1 > 0
        ? `; steps after the first: ${((t2 - t1) / 1000 / stepsAfter1).toFixed(2)} s wall, ${((cpu2 - cpu1) / stepsAfter1).toFixed(2)} s CPU each`
        : '';
    const status = await page.getByTestId('run-status').textContent();
    if (status !== 'done')
      throw new Error(
        `workers=${workers}: the run ${status}: ${await page
          .getByTestId('training-error')
          .textContent()
          .catch(() => '')}`,
      );
    const inUse = await page.getByTestId('cores-in-use').textContent();
    const rows = await newestRunRows(page);
    const t = (key: string) => mean(rows.map((r) => r[key] ?? 0));
    // A run validates at its last step too (step === totalSteps), inside that step's `timing_s/step`: the training
    // step alone, the figure `ragen bench --only step` gives (validation off), leaves it out.
    const training = mean(rows.map((r) => r['timing_s/step'] - (r['timing_s/testing'] ?? 0)));
    console.log(
      `workers=${workers} (cores in use ${inUse}, hardwareConcurrency ${cores}, load ${load}): wall ${wall.toFixed(1)} s ` +
        `(incl. step-0 validation), ${(steps / wall).toFixed(3)} steps/s; training step ${training.toFixed(2)} s ` +
        `(timing_s/step ${t('timing_s/step').toFixed(2)} with the last step's validation, ${t('timing_s/testing').toFixed(2)} a step); ` +
        `(gen ${t('timing_s/gen').toFixed(2)}, old_log_prob ${t('timing_s/old_log_prob').toFixed(2)}, adv ${t('timing_s/adv').toFixed(2)}, ` +
        `update_actor ${t('timing_s/update_actor').toFixed(2)}, update_critic ${t('timing_s/update_critic').toFixed(2)}); ` +
        `Chromium CPU ${cpu.toFixed(1)} s (${(cpu / wall).toFixed(2)} cores busy on average)${later}`,
    );
    await page.close();
  }
  await browser.close();
} finally {
  server.kill();
}
