// Checkpoints as directories on disk (Node only). Kept apart from checkpoint.ts, which the browser bundles too:
// the files themselves are built and parsed there (checkpointFiles / loadCheckpointFiles).
import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { CHECKPOINT_FILES, checkpointFiles, loadCheckpointFiles, type CheckpointableModel, type LoadedCheckpoint } from './checkpoint';
import type { Tokenizer } from './tokenizer';

/**
 * Writes the checkpoint to `dir` atomically: all files go to a sibling temp directory first, which then replaces
 * `dir` by rename. A crash mid-write leaves any previous checkpoint in `dir` untouched (at worst a stray
 * `dir.tmp-*` / `dir.old-*` sibling remains). Refuses to replace a non-empty directory that is not a checkpoint.
 */
export async function saveCheckpointDir(
  dir: string,
  model: CheckpointableModel,
  tokenizer: Tokenizer,
  extra: Record<string, Uint8Array> = {},
): Promise<void> {
  const target = path.resolve(dir);
  const existing = await fs.readdir(target).catch(() => null);
  if (existing && existing.length > 0 && !existing.includes('config.json')) {
    throw new Error(`saveCheckpointDir: refusing to replace ${target}: it is not empty and has no config.json ` +
      `(not a checkpoint directory)`);
  }
  const files = await checkpointFiles(model, tokenizer, extra);
  await fs.mkdir(path.dirname(target), { recursive: true });
  const stamp = `${process.pid}-${Date.now()}`;
  const tmp = `${target}.tmp-${stamp}`;
  await fs.mkdir(tmp);
  try {
    for (const [name, bytes] of Object.entries(files)) {
      if (name.includes('/') || name.includes('\\') || name.startsWith('.')) throw new Error(`saveCheckpointDir: bad file name '${name}'`);
      const handle = await fs.open(path.join(tmp, name), 'w');
      try {
        await handle.writeFile(bytes);
        await handle.sync(); // on disk before the rename makes it visible
      } finally {
        await handle.close();
      }
    }
  } catch (err) {
    await fs.rm(tmp, { recursive: true, force: true });
    throw err;
  }
  if (existing) {
    const old = `${target}.old-${stamp}`;
    await fs.rename(target, old);
    await fs.rename(tmp, target);
    await fs.rm(old, { recursive: true, force: true });
  } else {
    await fs.rename(tmp, target);
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
  const files: Record<string, Uint8Array> = {};
  for (const name of names) {
    if (wanted.has(name)) {
      const buf = await fs.readFile(path.join(dir, name));
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
