// Prints the whole suite's total as one line, "N passed, N failed, N skipped", from the JSON reports that vitest and
// Playwright write during `npm test` (reports/*.json). Exits non-zero if a report is missing or counts a failure,
// so a run that silently executed nothing cannot pass.
import { existsSync, readFileSync } from 'node:fs';

const reports = { unit: 'reports/vitest.json', e2e: 'reports/playwright.json' };
let passed = 0;
let failed = 0;
let skipped = 0;
for (const [name, path] of Object.entries(reports)) {
  if (!existsSync(path)) {
    console.error(`test-summary: the ${name} report ${path} is missing`);
    process.exit(1);
  }
  const r = JSON.parse(readFileSync(path, 'utf8'));
  if (name === 'unit') {
    passed += r.numPassedTests;
    failed += r.numFailedTests;
    skipped += r.numPendingTests + r.numTodoTests;
  } else {
    passed += r.stats.expected + r.stats.flaky;
    failed += r.stats.unexpected;
    skipped += r.stats.skipped;
  }
}
console.log(`${passed} passed, ${failed} failed, ${skipped} skipped`);
if (failed > 0 || passed === 0) process.exit(1);
