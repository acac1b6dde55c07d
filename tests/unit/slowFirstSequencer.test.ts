// The files the sequencer starts first must exist: a renamed slow file would silently go back to vitest's order.
import { existsSync } from 'node:fs';
import { expect, it } from 'vitest';
import { SLOW_FIRST } from './slowFirstSequencer';

it('every file the sequencer starts first is a test file here', () => {
  expect(SLOW_FIRST.filter((file) => !existsSync(file) || !file.endsWith('.test.ts'))).toEqual([]);
});
