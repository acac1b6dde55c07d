// Every file or directory a command writes for the user (`ragen eval --out / --trajectories`, `ragen warmstart --out`,
// `ragen import-metrics --out`, `ragen export OUT`) goes through this module, so that nothing a user already has is
// lost:
//   - an output that already exists is refused unless the user passed --force (`force`);
//   - a run's own files are never written, --force or not: nothing inside RUN/checkpoints/, and not RUN/config.json,
//     RUN/metrics.jsonl or RUN/rollouts.jsonl (only `ragen train` writes those, through src/starpo/runDir.ts);
//   - an output that cannot be written (a file where a directory should be, no permission, /proc or /sys, where
//     Node's recursive mkdir never returns) is refused before any work, with one line naming the flag and the path;
//   - writes are atomic: a temp sibling `NAME.tmp-PID-STAMP` renamed into place, so a command killed mid-write leaves
//     the old output (or none) and never half a file. Temp siblings of processes that are gone are removed on the
//     next write to the same output (pruneStaleTemps).
// The checks throw plain Errors; the commands turn them into usage errors (one line, exit 2).
import * as fs from 'node:fs';
import * as path from 'node:path';

/** The files of a run directory that only `ragen train` writes. */
export const RUN_OWNED_FILES = ['config.json', 'metrics.jsonl', 'rollouts.jsonl'] as const;
const CHECKPOINTS_DIR = 'checkpoints';

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

/** `abs` with its existing part resolved through symbolic links (so a link into a run is seen as the run). */
function realPathOf(abs: string): string {
  const { dir } = nearestExisting(abs);
  return path.join(fs.realpathSync(dir), path.relative(dir, abs));
}

/** Creates and removes a scratch directory in `dir`: the one honest test that something can be written there. */
function probeWritable(flag: string, shown: string, dir: string): void {
  const probe = path.join(dir, `.ragen-write-test-${process.pid}`);
  try {
    fs.mkdirSync(probe);
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    if (e.code === 'EEXIST') return;
    const why =
      e.code === 'EACCES' || e.code === 'EPERM'
        ? 'permission denied'
        : e.code === 'EROFS'
          ? 'read-only file system'
          : (e.code ?? e.message);
    throw new Error(`${flag} ${shown}: nothing can be created in ${dir} (${why})`, { cause: err });
  }
  fs.rmdirSync(probe);
}

/** True when `dir` is a training run's directory: it has metrics, checkpoints, a run lock or a run config. */
export function isRunDir(dir: string): boolean {
  if (
    statOrNull(path.join(dir, 'metrics.jsonl')) ||
    statOrNull(path.join(dir, CHECKPOINTS_DIR))?.isDirectory() ||
    statOrNull(path.join(dir, '.ragen.lock'))
  ) {
    return true;
  }
  try {
    const config = JSON.parse(fs.readFileSync(path.join(dir, 'config.json'), 'utf8')) as Record<string, unknown> | null;
    return config !== null && typeof config === 'object' && 'trainer' in config && !('model_type' in config);
  } catch {
    return false;
  }
}

/**
 * Throws when `target` is a run's own file or lies inside a run's checkpoints/ (or is that folder, or the run
 * directory itself): those are `ragen train`'s alone. Symbolic links are followed.
 */
export function assertNotRunOwned(flag: string, target: string): void {
  const real = realPathOf(path.resolve(target));
  if (isRunDir(real))
    throw new Error(`${flag} ${target} already holds a run: only ragen train writes there (choose another path)`);
  const parent = path.dirname(real);
  if ((RUN_OWNED_FILES as readonly string[]).includes(path.basename(real)) && isRunDir(parent)) {
    throw new Error(
      `${flag} ${target} is the ${path.basename(real)} of the run ${parent}: only ragen train writes it (choose another path)`,
    );
  }
  for (let dir = real; path.dirname(dir) !== dir; dir = path.dirname(dir)) {
    if (path.basename(dir) === CHECKPOINTS_DIR && isRunDir(path.dirname(dir))) {
      throw new Error(
        `${flag} ${target} lies inside the checkpoints of the run ${path.dirname(dir)}: only ragen train writes there (choose another path)`,
      );
    }
  }
}

export interface OutputOptions {
  /** The user passed --force: an existing output may be replaced (never a run's own files). */
  force?: boolean;
}

/**
 * Throws unless `file` can be written as a new file: its directory exists and is writable, it is not a directory,
 * not a run's own file, and (without `force`) does not exist yet.
 */
export function checkOutputFile(flag: string, file: string, opts: OutputOptions = {}): void {
  const abs = path.resolve(file);
  const stat = statOrNull(abs);
  if (stat?.isDirectory()) throw new Error(`${flag} ${file} is a directory, not a file`);
  const parent = path.dirname(abs);
  const parentStat = statOrNull(parent);
  if (!parentStat) throw new Error(`${flag} ${file}: the directory ${path.dirname(file)} does not exist`);
  if (!parentStat.isDirectory()) throw new Error(`${flag} ${file}: ${parent} is a file, not a directory`);
  assertNotRunOwned(flag, file);
  if (stat && !opts.force)
    throw new Error(
      `${flag} ${file} already exists: pass --force to replace it, or choose another path (nothing was written)`,
    );
  probeWritable(flag, file, parent);
}

/**
 * Throws unless `dir` is a directory this process can write into, or can be created as one. With `fresh`, an
 * existing non-empty directory is refused too unless `force` (the command would replace what is in it), and a run's
 * directory or anything inside its checkpoints/ always.
 */
export function checkOutputDir(flag: string, dir: string, opts: OutputOptions & { fresh?: boolean } = {}): void {
  const abs = path.resolve(dir);
  const { dir: existing, stat } = nearestExisting(abs);
  if (!stat.isDirectory()) {
    throw new Error(
      existing === abs
        ? `${flag} ${dir} exists and is not a directory`
        : `${flag} ${dir}: ${existing} is a file, not a directory`,
    );
  }
  if (opts.fresh) {
    assertNotRunOwned(flag, dir);
    if (existing === abs && fs.readdirSync(abs).length > 0 && !opts.force) {
      throw new Error(
        `${flag} ${dir} already exists and is not empty: pass --force to replace what is in it, or choose another path (nothing was written)`,
      );
    }
  }
  probeWritable(flag, dir, existing);
}

/** True when a process with this pid exists on this machine (EPERM: it exists but belongs to someone else). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** A fresh temp sibling name of `target`: `NAME.tmp-PID-STAMP`. */
export function tempSibling(target: string, kind: 'tmp' | 'old' = 'tmp'): string {
  return `${target}.${kind}-${process.pid}-${Date.now()}`;
}

/**
 * Removes what interrupted writes of `target` left beside it: `NAME.tmp-PID-STAMP` (a half-written output) and
 * `NAME.old-PID-STAMP` (the previous output, moved aside just before the new one was renamed in: put back when
 * `target` is missing, else removed), both only when process PID is gone. Returns one line per thing done.
 */
export function pruneStaleTemps(target: string): string[] {
  const dir = path.dirname(target);
  const base = path.basename(target);
  const done: string[] = [];
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return done;
  }
  const stale = new RegExp(`^${base.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\.(tmp|old)-(\\d+)-\\d+$`);
  for (const name of names) {
    const m = stale.exec(name);
    if (!m || processAlive(Number(m[2]))) continue;
    const leftover = path.join(dir, name);
    if (m[1] === 'old' && !fs.existsSync(target)) {
      fs.renameSync(leftover, target);
      done.push(`restored ${target} from ${name} (a write was interrupted)`);
    } else {
      fs.rmSync(leftover, { recursive: true, force: true });
      done.push(`removed ${leftover} (left by an interrupted write)`);
    }
  }
  return done;
}

/** Creates `file` (which must not exist) with `data`, flushed to disk before it returns. */
function writeSynced(file: string, data: string | Uint8Array): void {
  const fd = fs.openSync(file, 'wx');
  try {
    fs.writeSync(fd, typeof data === 'string' ? Buffer.from(data) : data);
    fs.fsyncSync(fd); // on disk before a rename makes it visible
  } finally {
    fs.closeSync(fd);
  }
}

/** Writes `file` atomically: a temp sibling, flushed to disk, renamed over `file`. */
export function writeFileAtomic(file: string, data: string | Uint8Array): void {
  pruneStaleTemps(file);
  const tmp = tempSibling(file);
  try {
    writeSynced(tmp, data);
    fs.renameSync(tmp, file);
  } catch (err) {
    fs.rmSync(tmp, { force: true });
    throw err;
  }
}

/**
 * Writes a directory of files atomically: a temp sibling directory, renamed over `dir`. An existing `dir` (the
 * caller checked that the user allowed replacing it) is moved aside first and removed once the new one is in place.
 * `files` maps relative paths (one or more `/`-separated parts) to bytes.
 */
export function writeDirAtomic(dir: string, files: Record<string, string | Uint8Array>): void {
  const target = path.resolve(dir);
  pruneStaleTemps(target);
  fs.mkdirSync(path.dirname(target), { recursive: true });
  const tmp = tempSibling(target);
  fs.mkdirSync(tmp);
  let aside: string | null = null;
  try {
    for (const [name, data] of Object.entries(files)) {
      const parts = name.split('/');
      if (parts.some((p) => p === '' || p === '.' || p === '..') || name.includes('\\'))
        throw new Error(`writeDirAtomic: bad file name '${name}'`);
      const file = path.join(tmp, ...parts);
      fs.mkdirSync(path.dirname(file), { recursive: true });
      writeSynced(file, data);
    }
    if (fs.existsSync(target)) {
      aside = tempSibling(target, 'old');
      fs.renameSync(target, aside);
    }
    fs.renameSync(tmp, target);
  } catch (err) {
    if (aside && !fs.existsSync(target)) fs.renameSync(aside, target);
    fs.rmSync(tmp, { recursive: true, force: true });
    throw err;
  }
  if (aside) fs.rmSync(aside, { recursive: true, force: true });
}
