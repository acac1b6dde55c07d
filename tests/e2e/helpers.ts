// Checks and artifacts shared by the e2e specs.
import { expect, type Page, type TestInfo } from '@playwright/test';

/** Same bound as the page's (workers/protocol.ts MATMUL_TOLERANCE), restated so a test does not trust the page's verdict alone. */
export const MATMUL_TOLERANCE = 1e-4;

/** Waits for the page's matmul self-check and asserts its reported error is small, reading the number itself. */
export async function expectWorkingMatmul(page: Page): Promise<void> {
  const check = page.getByTestId('matmul-check');
  await expect(check).toHaveAttribute('data-status', /^(pass|fail)$/);
  const maxAbsError = Number(await check.getAttribute('data-max-abs-error'));
  expect(Number.isFinite(maxAbsError), `max abs error attribute: ${maxAbsError}`).toBe(true);
  expect(maxAbsError).toBeLessThanOrEqual(MATMUL_TOLERANCE);
  await expect(check).toHaveAttribute('data-status', 'pass');
}

/** Saves a full-page screenshot under the test's output folder and attaches it to the report. */
export async function saveScreenshot(page: Page, testInfo: TestInfo, name: string): Promise<void> {
  const path = testInfo.outputPath(`${name}.png`);
  await page.screenshot({ path, fullPage: true });
  await testInfo.attach(name, { path, contentType: 'image/png' });
}

/** Collects console errors and uncaught page errors, so a failing assertion can say what the page said. */
export function watchErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on('pageerror', (err) => errors.push(`pageerror: ${err.message}`));
  page.on('console', (msg) => {
    if (msg.type() === 'error') errors.push(`console: ${msg.text()}`);
  });
  return errors;
}
