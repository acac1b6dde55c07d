// SVG -> PNG with the project's headless Chromium (Debian's /usr/bin/chromium through Playwright, as the e2e tests
// launch it): one browser for all charts of an experiment.
import * as fs from 'node:fs';
import { chromium } from '@playwright/test';
import { CHROMIUM_ARGS, CHROMIUM_PATH } from '../../tests/e2e/chromium';

export async function writePngs(charts: { file: string; svg: string }[]): Promise<void> {
  if (!charts.length) return;
  const browser = await chromium.launch({ executablePath: CHROMIUM_PATH, args: [...CHROMIUM_ARGS] });
  try {
    const page = await browser.newPage({ deviceScaleFactor: 1 });
    for (const { file, svg } of charts) {
      const [, w, h] = /width="(\d+)" height="(\d+)"/.exec(svg) ?? ['', '720', '380'];
      await page.setViewportSize({ width: Number(w), height: Number(h) });
      await page.setContent(`<html><body style="margin:0">${svg}</body></html>`);
      fs.writeFileSync(file, await page.locator('svg').screenshot({ type: 'png' }));
    }
  } finally {
    await browser.close();
  }
}
