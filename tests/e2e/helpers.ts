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

/** One text element whose colour does not reach the WCAG AA contrast for its size. */
export interface LowContrast {
  text: string;
  ratio: number;
  colour: string;
  background: string;
}

/**
 * Every visible element with its own text (disabled controls exempt, as WCAG has them) checked against WCAG AA:
 * 4.5:1, or 3:1 for large text (>= 24 px, or >= 18.66 px bold). The background is the nearest opaque one up the tree.
 */
export async function lowContrastText(page: Page, root = 'body'): Promise<LowContrast[]> {
  return page.evaluate((rootSelector) => {
    const parse = (c: string): [number, number, number, number] => {
      const m = /rgba?\(([^)]+)\)/.exec(c);
      if (!m) return [0, 0, 0, 0];
      const p = m[1]
        .split(/[ ,/]+/)
        .filter(Boolean)
        .map(Number);
      return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1];
    };
    const lum = ([r, g, b]: number[]) => {
      const f = (v: number) => {
        const s = v / 255;
        return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
      };
      return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
    };
    const backgroundOf = (el: Element | null): number[] => {
      for (let e = el; e; e = e.parentElement) {
        const bg = parse(getComputedStyle(e).backgroundColor);
        if (bg[3] >= 0.99) return bg;
      }
      return [255, 255, 255, 1];
    };
    const out: { text: string; ratio: number; colour: string; background: string }[] = [];
    const root = document.querySelector(rootSelector)!;
    for (const el of root.querySelectorAll('*')) {
      const own = [...el.childNodes]
        .filter((n) => n.nodeType === Node.TEXT_NODE)
        .map((n) => n.textContent!.trim())
        .join(' ')
        .trim();
      if (!own) continue;
      const style = getComputedStyle(el);
      const box = (el as HTMLElement).getBoundingClientRect();
      if (style.visibility === 'hidden' || style.display === 'none' || box.width === 0 || box.height === 0) continue;
      if ((el as HTMLButtonElement).disabled || el.closest('[disabled], option, select:disabled')) continue;
      const fg = parse(style.color);
      const bg = backgroundOf(el);
      const [l1, l2] = [lum(fg), lum(bg)].sort((a, b) => b - a);
      const ratio = (l1 + 0.05) / (l2 + 0.05);
      const size = parseFloat(style.fontSize);
      const large = size >= 24 || (size >= 18.66 && Number(style.fontWeight) >= 700);
      if (ratio < (large ? 3 : 4.5))
        out.push({
          text: own.slice(0, 60),
          ratio: Math.round(ratio * 100) / 100,
          colour: style.color,
          background: `rgb(${bg.slice(0, 3).join(', ')})`,
        });
    }
    return out;
  }, root);
}

/** WCAG contrast ratio of a hex colour against white. */
export function contrastOnWhite(hex: string): number {
  const [r, g, b] = [1, 3, 5]
    .map((i) => parseInt(hex.slice(i, i + 2), 16) / 255)
    .map((s) => (s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4));
  const l = 0.2126 * r + 0.7152 * g + 0.0722 * b;
  return 1.05 / (l + 0.05);
}
