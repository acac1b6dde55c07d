// Output paths checked before any work: a command that would train for an hour and then fail to write its result
// (an --out that is a file, lies under a file, or sits where nothing can be created: no permission, /proc, /sys)
// says so first, in one line naming the flag and the path. Errors are plain Errors; the commands turn them into
// usage errors (exit 2).
import * as fs from 'node:fs';
import * as path from 'node:path';

function statOrNull(p: string): fs.Stats | null {
  try {
    return fs.statSync(p);
  } catch {
    return null;
  }
}

/** The nearest existing ancestor of `abs` (itself included). */
function nearestExisting(abs: string): { dir: string; stat: fs.Stats } {
  for (let dir = abs; ; dir = path.dirname(dir)) {
    const stat = statOrNull(dir);
    if (stat) return { dir, stat };
    if (path.dirname(dir) === dir) throw new Error(`no part of ${abs} exists`);
  }
}

/** Creates and removes a scratch directory in `dir`: the one honest test that something can be written there. */
function probeWritable(flag: string, shown: string, dir: string): void {
  const probe = path.join(dir, `.ragen-write-test-${process.pid}`);
  try {
    fs.mkdirSync(probe);
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    if (e.code === 'EEXIST') return;
    const why = e.code === 'EACCES' || e.code === 'EPERM' ? 'permission denied' : e.code === 'EROFS' ? 'read-only file system' : (e.code ?? e.message);
    throw new Error(`${flag} ${shown}: nothing can be created in ${dir} (${why})`);
  }
  fs.rmdirSync(probe);
}

/** Throws unless `dir` is a directory this process can write into, or can be created as one. */
export function checkOutputDir(flag: string, dir: string): void {
  const abs = path.resolve(dir);
  const { dir: existing, stat } = nearestExisting(abs);
  if (!stat.isDirectory()) {
    throw new Error(existing === abs ? `${flag} ${dir} exists and is not a directory` : `${flag} ${dir}: ${existing} is a file, not a directory`);
  }
  probeWritable(flag, dir, existing);
}

/** Throws unless `file` can be written as a file: its directory exists and is writable, and it is not a directory. */
export function checkOutputFile(flag: string, file: string): void {
  const abs = path.resolve(file);
  const stat = statOrNull(abs);
  if (stat?.isDirectory()) throw new Error(`${flag} ${file} is a directory, not a file`);
  const parent = path.dirname(abs);
  const parentStat = statOrNull(parent);
  if (!parentStat) throw new Error(`${flag} ${file}: the directory ${path.dirname(file)} does not exist`);
  if (!parentStat.isDirectory()) throw new Error(`${flag} ${file}: ${parent} is a file, not a directory`);
  probeWritable(flag, file, parent);
}
