// Issue #5's other browser proofs: training on WebGPU (SwiftShader, so only a step), the main thread staying free
// while the worker trains, custom boards (a malformed one is refused by name and changes nothing, a valid one is
// played by the current policy), exporting a run and importing it back (a hostile archive refused), classroom
// mode's two workers (one colour per arm on every chart), and importing a CLI metrics.jsonl.
import { expect, test, type Page } from '@playwright/test';
import { readFileSync } from 'node:fs';
import { contrastOnWhite, expectWorkingMatmul, saveScreenshot, watchErrors } from './helpers';
import { readTar } from '../../src/ui/tar';

async function stepCount(page: Page): Promise<number> {
  return Number(await page.getByTestId('step-count').textContent());
}

test('training: webgpu (asked for) runs a real training step in the worker', async ({ page }, testInfo) => {
  test.setTimeout(400_000);
  const errors = watchErrors(page);
  await page.goto('./?preset=bandit-tiny&backend=webgpu&groups=4&groupSize=2&val=2');
  await expect(page.getByTestId('backend'), `page errors: ${errors.join(' | ')}`).toHaveText('webgpu');
  await expectWorkingMatmul(page);
  // A software adapter (SwiftShader here) is named as slower than wasm, before anything is trained on it.
  const adapter = await page.getByTestId('backend-adapter').textContent();
  if (/swiftshader|llvmpipe|lavapipe|software/i.test(adapter ?? ''))
    await expect(page.getByTestId('backend-software-warning')).toBeVisible();
  await page.getByTestId('step-once').click();
  await expect(page.getByTestId('step-count')).toHaveText('1', { timeout: 360_000 });
  await expect(page.getByTestId('run-status')).toHaveText('paused');
  await expect(page.getByTestId('training-error')).toHaveCount(0);
  await expect
    .poll(async () => Number(await page.getByTestId('chart-actor/grad_norm').getAttribute('data-points')))
    .toBeGreaterThanOrEqual(1);
  await expect(page.getByTestId('rollout-viewer').getByTestId('board').first()).toBeVisible();
  await saveScreenshot(page, testInfo, 'training-webgpu-one-step');
});

test('responsiveness: the main thread keeps its timers on time while the worker trains', async ({ page }, testInfo) => {
  test.setTimeout(300_000);
  // 8 env groups x 8: a step is long enough (about a second of tfjs work on wasm) that the same work on the main
  // thread would hold a tick back for longer than the lateness bound below.
  await page.goto('./?preset=bandit-tiny&backend=wasm&groups=8&groupSize=8');
  await expectWorkingMatmul(page);
  await page.getByTestId('start').click();
  // Measure once training is under way: the first step (with the validation before training) is done.
  await expect(page.getByTestId('step-count')).not.toHaveText('0', { timeout: 240_000 });
  const before = await stepCount(page);
  // In the page: a 20 ms interval and requestAnimationFrame, measured until the worker finishes two more steps (the
  // step counter's own change ends the window, seen by a MutationObserver): how late each tick fires and the longest
  // gap between frames.
  const timing = await page.evaluate(
    (startStep) =>
      new Promise<{ maxLateness: number; ticks: number; maxFrameGap: number; frames: number; ms: number }>(
        (resolve) => {
          const counter = document.querySelector('[data-testid="step-count"]')!;
          const lateness: number[] = [];
          let expected = performance.now() + 20;
          const interval = setInterval(() => {
            const now = performance.now();
            lateness.push(now - expected);
            expected = now + 20;
          }, 20);
          let maxFrameGap = 0;
          let last = performance.now();
          let frames = 0;
          let measuring = true;
          const frame = (t: number) => {
            maxFrameGap = Math.max(maxFrameGap, t - last);
            last = t;
            frames++;
            if (measuring) requestAnimationFrame(frame);
          };
          requestAnimationFrame(frame);
          const start = performance.now();
          const observer = new MutationObserver(() => {
            if (Number(counter.textContent) < startStep + 2) return;
            observer.disconnect();
            measuring = false;
            clearInterval(interval);
            resolve({
              maxLateness: Math.max(...lateness),
              ticks: lateness.length,
              maxFrameGap,
              frames,
              ms: performance.now() - start,
            });
          });
          observer.observe(counter, { childList: true, characterData: true, subtree: true });
        },
      ),
    before,
  );
  const after = await stepCount(page);
  await saveScreenshot(page, testInfo, 'responsiveness-while-training');
  testInfo.annotations.push({
    type: 'timing',
    description: JSON.stringify({ ...timing, stepsDuring: after - before }),
  });
  // The worker really trained during the window (the page's counter moved) ...
  expect(after).toBeGreaterThan(before);
  // ... while the page's timers stayed close to schedule: a training step (seconds of tfjs work) on the main thread
  // would delay a tick by that long. The bounds leave room for a busy 2-core CI machine.
  expect(timing.ticks).toBeGreaterThan(10);
  expect(timing.ticks).toBeGreaterThan(timing.ms / 20 / 2); // the interval kept at least half its rate
  expect(timing.maxLateness).toBeLessThan(250);
  expect(timing.maxFrameGap).toBeLessThan(400);
  await page.getByTestId('stop').click();
});

test('custom board: a malformed level shows an error naming the problem and changes nothing', async ({
  page,
}, testInfo) => {
  await page.goto('./?preset=bandit-tiny&backend=wasm&seed=5');
  await expectWorkingMatmul(page);
  const urlBefore = page.url();
  await page.getByTestId('custom-level-env').selectOption('SimpleSokoban');
  await page.getByTestId('custom-level-input').fill('#####\n#PP_#\n#_XO#\n#####');
  await page.getByTestId('custom-level-play').click();
  await expect(page.getByTestId('custom-level-error')).toContainText('player');
  // Well formed, but the box is in a corner: it can never reach its target.
  await page.getByTestId('custom-level-input').fill('#####\n#P_X#\n#__O#\n#####');
  await page.getByTestId('custom-level-play').click();
  await expect(page.getByTestId('custom-level-error')).toContainText('cannot be solved');
  await page.getByTestId('custom-level-env').selectOption('FrozenLake');
  await page.getByTestId('custom-level-input').fill('P__\n_Z_\n__G');
  await page.getByTestId('custom-level-play').click();
  await expect(page.getByTestId('custom-level-error')).toContainText("'Z'");
  // Each env keeps its own text: back to Sokoban shows the Sokoban board typed last, not the lake.
  await page.getByTestId('custom-level-env').selectOption('SimpleSokoban');
  await expect(page.getByTestId('custom-level-input')).toHaveValue('#####\n#P_X#\n#__O#\n#####');
  await expect(page.getByTestId('custom-level-error')).toHaveCount(0);
  // A Sokoban board must be walled in.
  await page.getByTestId('custom-level-input').fill('#####\n#P___\n#_XO_\n#####');
  await page.getByTestId('custom-level-play').click();
  await expect(page.getByTestId('custom-level-error')).toHaveText(
    "the level's right edge is not a wall (row 2 ends with '_'): put '#' all the way round",
  );
  await expect(page.getByTestId('custom-level-input')).toHaveAttribute('aria-invalid', 'true');
  await saveScreenshot(page, testInfo, 'custom-board-error');
  // Nothing changed: same settings in the URL, no run, no result.
  expect(page.url()).toBe(urlBefore);
  await expect(page.getByTestId('step-count')).toHaveText('0');
  await expect(page.getByTestId('custom-level-result')).toHaveCount(0);
  await expect(page.getByTestId('run-item')).toHaveCount(0);
});

test("custom board: a FrozenLake map is played by the preset's warm start before any run, then by the run's policy", async ({
  page,
}, testInfo) => {
  test.setTimeout(300_000);
  await page.goto('./?preset=frozenlake-noslip-tiny&backend=wasm&groups=4&groupSize=2');
  await expectWorkingMatmul(page);
  // The panel offers the env the preset trains on, and says who plays before any run exists.
  await expect(page.getByTestId('custom-level-env')).toHaveValue('FrozenLake');
  await expect(page.getByTestId('custom-level-policy')).toContainText("the preset's warm-start policy plays it");
  // Gym's familiar letters are read as the env's own.
  await page.getByTestId('custom-level-input').fill('SFH\nFFH\nHFG');
  await page.getByTestId('custom-level-play').click();
  const result = page.getByTestId('custom-level-result');
  await expect(result).toBeVisible({ timeout: 120_000 });
  await expect(page.getByTestId('custom-level-error')).toHaveCount(0);
  const board = result.getByTestId('board').first();
  await expect(board).toHaveAttribute('data-kind', 'grid');
  await expect(board).toHaveAttribute('data-rows', '3');
  await expect(board.locator('[data-tile="player"]').first()).toBeVisible();
  await expect(board.locator('[data-tile="goal"]')).toHaveCount(1);
  await saveScreenshot(page, testInfo, 'custom-board-played');
  // A bad board after a played one: the error replaces the old episode (it would read as this board's answer).
  await page.getByTestId('custom-level-input').fill('P_O\n__O\nO_Z');
  await page.getByTestId('custom-level-play').click();
  await expect(page.getByTestId('custom-level-error')).toHaveText(/unknown symbol 'Z' at row 3, column 3/);
  await expect(result).toHaveCount(0);
  // A board of an env this policy never trained on is refused in plain words.
  await page.getByTestId('custom-level-env').selectOption('SimpleSokoban');
  await page.getByTestId('custom-level-play').click();
  await expect(page.getByTestId('custom-level-error')).toContainText(
    "this run's policy was trained on FrozenLake, never on SimpleSokoban",
  );

  // One training step, then the same board is played by the run's current policy.
  await page.getByTestId('step-once').click();
  await expect(page.getByTestId('step-count')).toHaveText('1', { timeout: 240_000 });
  await page.getByTestId('custom-level-env').selectOption('FrozenLake');
  await expect(page.getByTestId('custom-level-policy')).toContainText("the run's current policy");
  await page.getByTestId('custom-level-input').fill('P_O\n__O\nO_G');
  await page.getByTestId('custom-level-play').click();
  await expect(result).toBeVisible({ timeout: 120_000 });

  // Export: one tar in the CLI's run-directory layout, with the checkpoint the pause left behind.
  const item = page.getByTestId('run-item').first();
  await expect(item).toHaveAttribute('data-step', '1');
  const [download] = await Promise.all([page.waitForEvent('download'), item.getByTestId('run-export').click()]);
  const files = readTar(new Uint8Array(readFileSync(await download.path())));
  const steps = new TextDecoder()
    .decode(files.get('metrics.jsonl'))
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l).step);
  expect(steps).toEqual([0, 1]);
  expect(JSON.parse(new TextDecoder().decode(files.get('config.json'))).agent.groupSize).toBe(2);
  for (const name of ['config.json', 'model.safetensors', 'tokenizer.json', 'trainer_state.json']) {
    expect(files.has(`checkpoints/step-1/${name}`), name).toBe(true);
  }

  // Import: the exported archive comes back as a second run; a hostile one (a header whose size is negative, which
  // used to send the reader into an endless loop on this page's UI thread) is refused in one line.
  const archive = readFileSync(await download.path());
  await page
    .getByTestId('import-file')
    .setInputFiles({ name: 'run.tar', mimeType: 'application/x-tar', buffer: archive });
  await expect(page.getByTestId('run-item')).toHaveCount(2);
  await expect(page.getByTestId('import-error')).toHaveCount(0);
  const hostile = Buffer.from(archive);
  hostile.fill(0, 124, 136);
  hostile.write('-0000001000', 124, 'latin1');
  hostile.fill(0x20, 148, 156);
  const sum = hostile.subarray(0, 512).reduce((a, b) => a + b, 0);
  hostile.write(sum.toString(8).padStart(6, '0') + '\0 ', 148, 'latin1');
  await page
    .getByTestId('import-file')
    .setInputFiles({ name: 'hostile.tar', mimeType: 'application/x-tar', buffer: hostile });
  await expect(page.getByTestId('import-error')).toContainText('bad size field "-0000001000" in the header at byte 0');
  await expect(page.getByTestId('run-item')).toHaveCount(2);
});

test('classroom: echo-trap trains vanilla StarPO and StarPO-S side by side in two workers, curves overlaid', async ({
  page,
}, testInfo) => {
  test.setTimeout(400_000);
  const errors = watchErrors(page);
  await page.goto('./?preset=echo-trap&backend=wasm&groups=4&groupSize=2&turns=1');
  await expectWorkingMatmul(page);
  await expect(page.getByTestId('classroom-note')).toBeVisible();
  await page.getByTestId('step-once').click();
  await expect(page.getByTestId('arm-step-starpo')).toContainText('starpo: 1', { timeout: 360_000 });
  await expect(page.getByTestId('arm-step-starpo-s')).toContainText('starpo-s: 1', { timeout: 360_000 });
  await expect(page.getByTestId('training-error'), `page errors: ${errors.join(' | ')}`).toHaveCount(0);
  // Each chart overlays both arms' series.
  const chart = page.getByTestId('chart-actor/entropy_loss');
  await expect.poll(async () => Number(await chart.getAttribute('data-series'))).toBe(2);
  await expect(chart.locator('[data-testid="chart-series"][data-arm="starpo"]')).toContainText(
    'starpo · policy entropy',
  );
  await expect(chart.locator('[data-testid="chart-series"][data-arm="starpo-s"]')).toContainText(
    'starpo-s · policy entropy',
  );
  await expect(page.getByTestId('run-item')).toHaveCount(2);
  // One colour per arm, on every chart: every series and swatch of an arm carries the same data-colour, the two
  // arms' colours differ, and both are readable on white.
  const tagged = await page.locator('[aria-label="Charts"] [data-arm][data-colour]').evaluateAll((els) =>
    els.map((e) => ({
      arm: e.getAttribute('data-arm')!,
      colour: e.getAttribute('data-colour')!,
      swatch: e.classList.contains('swatch'),
    })),
  );
  expect(tagged.filter((t) => t.swatch).length).toBeGreaterThanOrEqual(2 * 6); // both arms on at least 6 charts
  const colours = new Map<string, Set<string>>();
  for (const t of tagged) colours.set(t.arm, (colours.get(t.arm) ?? new Set()).add(t.colour));
  expect([...colours.keys()].sort()).toEqual(['starpo', 'starpo-s']);
  expect(colours.get('starpo')!.size).toBe(1);
  expect(colours.get('starpo-s')!.size).toBe(1);
  const [starpoColour] = colours.get('starpo')!;
  const [starpoSColour] = colours.get('starpo-s')!;
  expect(starpoColour).not.toBe(starpoSColour);
  for (const c of [starpoColour, starpoSColour]) expect(contrastOnWhite(c)).toBeGreaterThanOrEqual(4.5);
  // The canvas really draws each arm in its colour: pixels of both colours are on the entropy plot.
  const drawn = await chart.locator('canvas').evaluate(
    (canvas: HTMLCanvasElement, wanted: string[]) => {
      const ctx = canvas.getContext('2d')!;
      const { data } = ctx.getImageData(0, 0, canvas.width, canvas.height);
      const rgb = wanted.map((hex) => [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16)));
      const counts = rgb.map(() => 0);
      for (let i = 0; i < data.length; i += 4) {
        rgb.forEach(([r, g, b], k) => {
          if (Math.abs(data[i] - r) + Math.abs(data[i + 1] - g) + Math.abs(data[i + 2] - b) < 24 && data[i + 3] > 200)
            counts[k]++;
        });
      }
      return counts;
    },
    [starpoColour, starpoSColour],
  );
  expect(drawn[0], `pixels of ${starpoColour}`).toBeGreaterThan(3);
  expect(drawn[1], `pixels of ${starpoSColour}`).toBeGreaterThan(3);
  await saveScreenshot(page, testInfo, 'classroom-echo-trap');
});

test('import: a CLI metrics.jsonl is drawn on the charts, with the echo-trap warning where it fired', async ({
  page,
}, testInfo) => {
  await page.goto('./?backend=wasm');
  await expect(page.getByTestId('backend')).toHaveText('wasm');
  // A run whose reward std and entropy collapse after step 6 (the detector's defaults fire on it).
  const lines = [];
  for (let step = 1; step <= 12; step++) {
    const level = step <= 6 ? 1 : 0.05;
    lines.push(
      JSON.stringify({
        step,
        'rollout/in_group_std': level,
        'actor/entropy_loss': 2 * level,
        'actor/grad_norm': 1,
        'train/Bandit/success': 0.5,
      }),
    );
  }
  await page.getByTestId('import-file').setInputFiles({
    name: 'metrics.jsonl',
    mimeType: 'application/jsonl',
    buffer: Buffer.from(lines.join('\n') + '\n'),
  });
  await expect(page.getByTestId('chart-rollout/in_group_std')).toHaveAttribute('data-points', '12');
  await expect(page.getByTestId('echo-trap-warning')).toBeVisible();
  await expect(page.getByTestId('echo-trap-warning')).toContainText('fired at step 8');
  await expect(page.getByTestId('chart-actor/entropy_loss')).toHaveAttribute('data-echo-trap-steps', '8');
  await saveScreenshot(page, testInfo, 'import-metrics-echo-trap');
  // A broken file is refused by name.
  await page.getByTestId('import-file').setInputFiles({
    name: 'metrics.jsonl',
    mimeType: 'application/jsonl',
    buffer: Buffer.from('{"step":1}\nnot json\n{"step":2}\n'),
  });
  await expect(page.getByTestId('import-error')).toContainText('line 2 is not valid JSON');
});
