// Checkpoints as directories on disk (Node only). Kept apart from checkpoint.ts, which the browser bundles too:
// the files themselves are built and parsed there (checkpointFiles / loadCheckpointFiles).
import * as fsSync from 'node:fs';
import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { ADAPTER_DIR } from './lora';
import { checkpointFiles, loadCheckpointFiles, type CheckpointableModel, type LoadedCheckpoint } from './checkpoint';
import type { Tokenizer } from './tokenizer';

/**
 * Writes the checkpoint to `dir` atomically: all files go to a sibling temp directory first, which then replaces
 * `dir` by rename. A crash mid-write leaves any previous checkpoint in `dir` untouched (at worst a stray
 * `dir.tmp-*` / `dir.old-*` sibling remains); a failure removes the temp directory. Refuses to replace a file or a
 * non-empty directory that is not a checkpoint (assertCheckpointTarget).
 */
export async function saveCheckpointDir(
  dir: string,
  model: CheckpointableModel,
  tokenizer: Tokenizer,
  extra: Record<string, Uint8Array> = {},
): Promise<void> {
  const target = path.resolve(dir);
  assertCheckpointTarget(target);
  const existing = await fs.readdir(target).catch(() => null);
  const files = await checkpointFiles(model, tokenizer, extra);
  await fs.mkdir(path.dirname(target), { recursive: true });
  const stamp = `${process.pid}-${Date.now()}`;
  const tmp = `${target}.tmp-${stamp}`;
  await fs.mkdir(tmp);
  let movedAside: string | null = null;
  try {
    for (const [name, bytes] of Object.entries(files)) {
      // Flat files, and a LoRA model's adapter/ (PEFT's adapter directory).
      const base = name.startsWith(ADAPTER_DIR) ? name.slice(ADAPTER_DIR.length) : name;
      if (base.includes('/') || base.includes('\\') || base.startsWith('.'))
        throw new Error(`saveCheckpointDir: bad file name '${name}'`);
      if (base !== name) await fs.mkdir(path.join(tmp, ADAPTER_DIR), { recursive: true });
      const handle = await fs.open(path.join(tmp, name), 'w');
      try {
        await handle.writeFile(bytes);
        await handle.sync(); // on disk before the rename makes it visible
      } finally {
        await handle.close();
      }
    }
    if (existing) {
      movedAside = `${target}.old-${stamp}`;
      await fs.rename(target, movedAside);
    }
    await fs.rename(tmp, target);
    if (movedAside) await fs.rm(movedAside, { recursive: true, force: true });
  } catch (err) {
    // A failed save leaves no temp folder behind, and the previous checkpoint where it was.
    if (movedAside && !fsSync.existsSync(target)) await fs.rename(movedAside, target).catch(() => {});
    await fs.rm(tmp, { recursive: true, force: true });
    throw err;
  }
}

/**
 * Throws an Error naming `dir` unless a checkpoint can be written there: it is missing, or a directory that is
 * empty or already a checkpoint (has config.json). Anything else (a file, a folder of other things) is never
 * replaced. Synchronous, so commands can check their --out before any work.
 */
export function assertCheckpointTarget(dir: string): void {
  let stat: fsSync.Stats;
  try {
    stat = fsSync.statSync(dir);
  } catch {
    return; // missing: it will be created
  }
  if (!stat.isDirectory())
    throw new Error(`${dir} exists and is not a directory: refusing to replace it with a checkpoint`);
  const names = fsSync.readdirSync(dir);
  if (names.length > 0 && !names.includes('config.json')) {
    throw new Error(`refusing to replace ${dir}: it is not empty and has no config.json (not a checkpoint directory)`);
  }
}

/** Where a checkpoint keeps files: the top level, a PPO critic, and LoRA adapters (the actor's and the critic's). */
const CHECKPOINT_SUBDIRS = ['', 'critic/', ADAPTER_DIR, `critic/${ADAPTER_DIR}`];

/**
 * The files of a checkpoint or model directory (ours, a trainer checkpoint with its critic and optimizer state, or a
 * Hugging Face Qwen2 / Qwen2.5 one, sharded weights included), by relative path: every *.json and *.safetensors file
 * at its top level and in critic/, adapter/ and critic/adapter/. Every command reads checkpoints through this one
 * function (eval, resume, export, a run's initial model), so one rule holds for all: a file is read only from inside
 * `dir`. A symbolic link is followed only when it resolves inside `dir`, and a shard index names plain file names
 * (readShardedSafetensors checks those). Throws an Error naming the file.
 */
export function readCheckpointFiles(dir: string): Record<string, Uint8Array> {
  let root: string;
  try {
    if (!fsSync.statSync(dir).isDirectory()) throw new Error(`checkpoint directory ${dir} is a file, not a directory`);
    root = fsSync.realpathSync(dir);
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    throw e.code === 'ENOENT' ? new Error(`checkpoint directory ${dir} does not exist`) : err;
  }
  const files: Record<string, Uint8Array> = {};
  for (const sub of CHECKPOINT_SUBDIRS) {
    const subDir = path.join(root, sub);
    if (sub && !isDirectoryInside(subDir, root)) continue;
    for (const name of fsSync.readdirSync(subDir)) {
      if (!/\.(json|safetensors)$/.test(name) || name.startsWith('.')) continue;
      const file = path.join(subDir, name);
      const real = fsSync.realpathSync(file);
      if (!insideOf(real, root)) {
        throw new Error(
          `${path.join(dir, sub, name)} is a symbolic link to ${real}, outside the checkpoint: every file of a checkpoint ` +
            'must lie inside its directory (copy the file in)',
        );
      }
      if (!fsSync.statSync(real).isFile())
        throw new Error(`${path.join(dir, sub, name)} cannot be read: it is a directory, not a file`);
      const buf = fsSync.readFileSync(real);
      files[sub + name] = new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength);
    }
  }
  return files;
}

function insideOf(real: string, root: string): boolean {
  return real === root || real.startsWith(root + path.sep);
}

/** True when `dir` is a directory whose real path lies inside `root` (a symbolic link out is not followed). */
function isDirectoryInside(dir: string, root: string): boolean {
  try {
    const real = fsSync.realpathSync(dir);
    if (!insideOf(real, root))
      throw new Error(
        `${dir} is a symbolic link to ${real}, outside the checkpoint: every file of a checkpoint must lie inside its directory`,
      );
    return fsSync.statSync(real).isDirectory();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw err;
  }
}

/** readCheckpointFiles, for callers that await (the policy loaders). */
export async function readCheckpointDirFiles(dir: string): Promise<Record<string, Uint8Array>> {
  return readCheckpointFiles(dir);
}

/** Reads a checkpoint directory and loads it with loadCheckpointFiles (a policy: loadPolicyFiles). */
export async function loadCheckpointDir(dir: string): Promise<LoadedCheckpoint> {
  const files = await readCheckpointDirFiles(dir);
  try {
    return loadCheckpointFiles(files);
  } catch (err) {
    throw new Error(`${(err as Error).message} (in ${dir})`, { cause: err });
  }
}
