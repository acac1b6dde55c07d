// Fixtures made once per `vitest run` and shared by the test files that read them, in the run's scratch directory
// (tests/unit/globalSetup.ts). Test files run in separate processes, two or more at a time: the first file to ask
// makes the fixture (holding a lock directory, which mkdir creates atomically), the others wait for its result file.
// A shared fixture must only be read: a test that changes files works on its own copy.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { inject } from 'vitest';
import { ragenProcess, type RagenResult } from './ragenProcess';

/** How long a file waits for a fixture another file is making before it fails, naming the fixture. */
const WAIT_MS = 600_000;

/**
 * `ragen init-model --shape qwen2.5-0.5b --layers 2` (seed 0): Qwen2.5-0.5B's vocabulary (151,936) and every width,
 * two decoder layers, 166M parameters in 317 MiB of bf16. Read by init-model.test.ts (Hugging Face interop) and
 * train-qwen-shape.test.ts (one training step); writing it costs about 10 s of CPU, paid once per run.
 * Returns the directory and the command's exit code, stdout and stderr (the tests check them).
 */
export function qwenInitModel2Layers(): Promise<{ dir: string; made: RagenResult }> {
  // "qwen" in the path: RAGEN tells a Qwen tokenizer by its path.
  return sharedFixture('qwen2.5-0.5b-2layers', (dir) =>
    ragenProcess(
      path.dirname(dir),
      ['init-model', '--shape', 'qwen2.5-0.5b', '--layers', '2', '--out', dir, '--quiet'],
      300_000,
    ),
  );
}

async function sharedFixture(
  name: string,
  make: (dir: string) => Promise<RagenResult>,
): Promise<{ dir: string; made: RagenResult }> {
  const root = inject('sharedScratch');
  const dir = path.join(root, name);
  const resultFile = `${dir}.result.json`;
  try {
    fs.mkdirSync(`${dir}.lock`);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    // Another test file is making it: wait for the result it writes (also when making it failed).
    const deadline = Date.now() + WAIT_MS;
    while (!fs.existsSync(resultFile)) {
      if (Date.now() > deadline)
        throw new Error(
          `shared fixture ${name}: not made within ${WAIT_MS / 1000} s by the test file holding ${dir}.lock`,
          { cause: err },
        );
      await sleep(250);
    }
    return { dir, made: JSON.parse(fs.readFileSync(resultFile, 'utf8')) as RagenResult };
  }
  const made = await make(dir);
  fs.writeFileSync(`${resultFile}.tmp`, JSON.stringify(made));
  fs.renameSync(`${resultFile}.tmp`, resultFile); // whole or absent for a waiting reader
  return { dir, made };
}
