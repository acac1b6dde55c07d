// The run-directory lock: one holder at a time, a dead holder's lock is taken over, another host's never is.
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { LOCK_FILE, RunLockedError, acquireRunLock } from '../../../src/node/runLock';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'run-lock-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

const deadPid = () =>
  Number(spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' }).stdout);
const writeLock = (dir: string, owner: object | string) =>
  fs.writeFileSync(path.join(dir, LOCK_FILE), typeof owner === 'string' ? owner : JSON.stringify(owner));

describe('acquireRunLock', () => {
  it('creates the directory and the lock, refuses a second holder while held, and is free again after release', () => {
    const dir = path.join(tmp, 'a', 'run');
    const lock = acquireRunLock(dir);
    expect(JSON.parse(fs.readFileSync(lock.file, 'utf8'))).toMatchObject({ pid: process.pid, host: os.hostname() });
    expect(() => acquireRunLock(dir)).toThrow(RunLockedError);
    expect(() => acquireRunLock(dir)).toThrow(new RegExp(`in use by another ragen process \\(pid ${process.pid} on `));
    lock.release();
    lock.release(); // twice is harmless
    expect(fs.readdirSync(dir)).toEqual([]);
    acquireRunLock(dir).release();
  });

  it('takes over the lock of a process that is gone, or an unreadable one, but not one from another host', () => {
    const dir = path.join(tmp, 'stale');
    fs.mkdirSync(dir);
    writeLock(dir, { pid: deadPid(), host: os.hostname(), started: 'then' });
    acquireRunLock(dir).release();
    writeLock(dir, '{"pid": 12');
    acquireRunLock(dir).release();
    writeLock(dir, { pid: deadPid(), host: `${os.hostname()}-elsewhere`, started: 'then' });
    expect(() => acquireRunLock(dir)).toThrow(/elsewhere/);
    expect(fs.readdirSync(dir)).toEqual([LOCK_FILE]); // no stray takeover files
  });

  it('does not release a lock another process has taken over since', () => {
    const dir = path.join(tmp, 'taken');
    const lock = acquireRunLock(dir);
    writeLock(dir, { pid: process.pid + 1, host: os.hostname(), started: 'later' });
    lock.release();
    expect(fs.existsSync(path.join(dir, LOCK_FILE))).toBe(true);
  });

  it('names a path that cannot hold a run directory', () => {
    const file = path.join(tmp, 'file');
    fs.writeFileSync(file, '');
    expect(() => acquireRunLock(path.join(file, 'run'))).toThrow(/ENOTDIR|EEXIST/);
  });
});
