// One writer per run directory. `ragen train` holds OUT/.ragen.lock (its pid and host, as JSON) from before any
// work until it exits, so two runs started into the same --out at the same instant cannot both write (their rows
// would interleave in one metrics.jsonl), and `--resume` into a run that is still training is refused.
//
// The lock file is created by link(), which is atomic on local file systems: of two racing processes exactly one
// creates it, and it appears with its content complete. A lock left by a process that no longer runs (killed with -9, power loss) is stale: the next
// run takes it over. Takeover renames the stale file to a name of its own first and checks that what it renamed
// is still the stale lock, so two processes recovering the same stale lock at once cannot both win. Node only.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { processAlive } from './safeWrite';

export const LOCK_FILE = '.ragen.lock';

interface LockOwner {
  pid: number;
  host: string;
  started: string;
}

/** Thrown when another live process holds the lock; the message names it and the lock file. */
export class RunLockedError extends Error {}

function readOwner(file: string): LockOwner | null {
  try {
    const owner = JSON.parse(fs.readFileSync(file, 'utf8')) as Partial<LockOwner>;
    return typeof owner.pid === 'number' && typeof owner.host === 'string' ? (owner as LockOwner) : null;
  } catch {
    return null; // unreadable: not a lock this code wrote, so no live owner
  }
}

/** A lock is stale when its owner ran on this host and is gone; a lock from another host is never taken over. */
function isStale(owner: LockOwner | null): boolean {
  return owner === null || (owner.host === os.hostname() && !processAlive(owner.pid));
}

/**
 * Throws RunLockedError naming the live process that holds the lock of `runDir`, if one does: lets a command say
 * "in use by pid N" before it judges anything else in a directory another run is still writing. Takes nothing.
 */
export function assertNotLocked(runDir: string): void {
  const owner = readOwner(path.join(runDir, LOCK_FILE));
  if (owner !== null && !isStale(owner)) throw new RunLockedError(inUseMessage(runDir, owner));
}

/** The one line naming who holds a run directory. */
function inUseMessage(runDir: string, owner: LockOwner): string {
  return (
    `${runDir} is in use by another ragen process (pid ${owner.pid} on ${owner.host}, since ${owner.started}); ` +
    `wait for it to finish, or delete ${path.join(runDir, LOCK_FILE)} if that process is gone`
  );
}

export interface RunLock {
  readonly file: string;
  /** Deletes the lock file (only while it is still this process's). Safe to call twice. */
  release(): void;
}

/**
 * Takes the lock of `runDir` (creating the directory). Throws RunLockedError when a live process holds it; file
 * system errors (a path under a file, no permission) propagate for the caller to name.
 */
export function acquireRunLock(runDir: string): RunLock {
  fs.mkdirSync(runDir, { recursive: true });
  const file = path.join(runDir, LOCK_FILE);
  const me: LockOwner = { pid: process.pid, host: os.hostname(), started: new Date().toISOString() };
  for (let attempt = 0; attempt < 3; attempt++) {
    // Written in full under a name of our own, then hard-linked into place: link() fails when the lock exists,
    // and a lock that exists is never empty or half written.
    const mine = `${file}.${process.pid}.tmp`;
    fs.writeFileSync(mine, JSON.stringify(me) + '\n');
    try {
      fs.linkSync(mine, file);
      return lockHandle(file);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    } finally {
      fs.rmSync(mine, { force: true });
    }
    const owner = readOwner(file);
    if (!isStale(owner)) {
      throw new RunLockedError(inUseMessage(runDir, owner!));
    }
    takeOverStale(file, owner);
  }
  throw new RunLockedError(`${runDir}: could not take ${file} (other processes keep taking it over)`);
}

function takeOverStale(file: string, owner: LockOwner | null): void {
  const aside = `${file}.stale-${process.pid}-${Date.now()}`;
  try {
    fs.renameSync(file, aside);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return; // someone else removed it first: just retry
    throw err;
  }
  const renamed = readOwner(aside);
  const same =
    owner === null
      ? renamed === null
      : renamed !== null && renamed.pid === owner.pid && renamed.started === owner.started;
  if (!same && !fs.existsSync(file))
    fs.renameSync(aside, file); // we moved a fresh lock of another process: put it back
  else fs.rmSync(aside, { force: true });
}

function lockHandle(file: string): RunLock {
  let released = false;
  return {
    file,
    release() {
      if (released) return;
      released = true;
      if (readOwner(file)?.pid === process.pid) fs.rmSync(file, { force: true });
    },
  };
}
