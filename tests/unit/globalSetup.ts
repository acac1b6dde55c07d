// Runs once per `vitest run`, in the main process, before any test file: a scratch directory that every test file
// of the run can reach (inject('sharedScratch')), for fixtures that are expensive to make and identical across
// files (tests/unit/sharedFixtures.ts). Removed when the run ends. Making it costs nothing; what goes in it is made
// on first use, so a run of one file pays only for the fixtures that file asks for.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The run's shared scratch directory (absolute). */
    sharedScratch: string;
  }
}

export default function setup(project: TestProject): () => void {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ragen-unit-shared-'));
  project.provide('sharedScratch', dir);
  return () => fs.rmSync(dir, { recursive: true, force: true });
}
