// Checkpoints as directories on disk (Node only). Kept apart from checkpoint.ts, which the browser bundles too:
// the files themselves are built and parsed there (checkpointFiles / loadCheckpointFiles).
import * as fsSync from 'node:fs';
import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { ADAPTER_CONFIG_FILE, ADAPTER_DIR, ADAPTER_WEIGHTS_FILE } from './lora';
import { CHECKPOINT_FILES, checkpointFiles, loadCheckpointFiles, type CheckpointableModel, type LoadedCheckpoint } from './checkpoint';
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
      if (base.includes('/') || base.includes('\\') || base.startsWith('.')) throw new Error(`saveCheckpointDir: bad file name '${name}'`);
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
  if (!stat.isDirectory()) throw new Error(`${dir} exists and is not a directory: refusing to replace it with a checkpoint`);
  const names = fsSync.readdirSync(dir);
  if (names.length > 0 && !names.includes('config.json')) {
    throw new Error(`refusing to replace ${dir}: it is not empty and has no config.json (not a checkpoint directory)`);
  }
}

/** The files of a checkpoint directory (ours, or a Hugging Face Qwen2 / Qwen2.5 one, sharded weights included). */
export async function readCheckpointDirFiles(dir: string): Promise<Record<string, Uint8Array>> {
  const names = await fs.readdir(dir).catch((err: NodeJS.ErrnoException) => {
    throw new Error(`checkpoint directory ${dir} cannot be read: ${err.code === 'ENOENT' ? 'it does not exist' : err.message}`);
  });
  const wanted = new Set<string>([...CHECKPOINT_FILES, 'model.safetensors.index.json']);
  if (!names.includes('model.safetensors') && names.includes('model.safetensors.index.json')) {
    const index = JSON.parse(await fs.readFile(path.join(dir, 'model.safetensors.index.json'), 'utf8')) as
      { weight_map?: Record<string, string> };
    for (const shard of Object.values(index.weight_map ?? {})) wanted.add(shard);
  }
  // A LoRA model's adapters (lora.ts: PEFT's adapter directory under adapter/).
  for (const name of [ADAPTER_CONFIG_FILE, ADAPTER_WEIGHTS_FILE]) {
    if (!fsSync.existsSync(path.join(dir, ADAPTER_DIR, name))) continue;
    names.push(ADAPTER_DIR + name);
    wanted.add(ADAPTER_DIR + name);
  }
  const files: Record<string, Uint8Array> = {};
  for (const name of names) {
    if (wanted.has(name)) {
      const file = path.join(dir, name);
      const buf = await fs.readFile(file).catch((err: NodeJS.ErrnoException) => {
        throw new Error(`${file} cannot be read: ${err.code === 'EISDIR' ? 'it is a directory, not a file' : err.message}`);
      });
      files[name] = new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength);
    }
  }
  return files;
}

/** Reads a checkpoint directory and loads it with loadCheckpointFiles (a policy: loadPolicyFiles). */
export async function loadCheckpointDir(dir: string): Promise<LoadedCheckpoint> {
  const files = await readCheckpointDirFiles(dir);
  try {
    return loadCheckpointFiles(files);
  } catch (err) {
    throw new Error(`${(err as Error).message} (in ${dir})`);
  }
}
