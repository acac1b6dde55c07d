// What the context-length checks need from a model directory on disk, read without tfjs (so before the backend
// starts): its tokenizer (to count prompt tokens) and max_position_embeddings. Errors name the file.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Tokenizer, chatTokenIds } from './tokenizer';

export interface ModelContext {
  countTokens: (text: string) => number;
  maxPositions: number;
}

function readJsonFile(file: string): unknown {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    throw new Error(
      `${file} cannot be read: ${e.code === 'ENOENT' ? 'it does not exist' : e.code === 'EISDIR' ? 'it is a directory' : e.message}`,
      { cause: err },
    );
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new Error(`${file} is not valid JSON: ${(err as Error).message}`, { cause: err });
  }
}

/** The tokenizer and positions of a Hugging Face model directory (config.json, tokenizer.json[, tokenizer_config.json]). */
export function readModelContext(dir: string): ModelContext {
  const weights = path.join(dir, 'model.safetensors');
  if (fs.existsSync(weights) && !fs.statSync(weights).isFile()) throw new Error(`${weights} is not a file`);
  const configFile = path.join(dir, 'config.json');
  const maxPositions = (readJsonFile(configFile) as { max_position_embeddings?: unknown }).max_position_embeddings;
  if (typeof maxPositions !== 'number' || !Number.isInteger(maxPositions) || maxPositions < 1) {
    throw new Error(
      `${configFile}: max_position_embeddings must be a positive integer, got ${JSON.stringify(maxPositions)}`,
    );
  }
  const tokenizerFile = path.join(dir, 'tokenizer.json');
  const configPath = path.join(dir, 'tokenizer_config.json');
  let tokenizer: Tokenizer;
  try {
    tokenizer = Tokenizer.fromJSON(
      readJsonFile(tokenizerFile) as object,
      fs.existsSync(configPath) ? (readJsonFile(configPath) as object) : undefined,
    );
    chatTokenIds(tokenizer); // a tokenizer the sampler cannot use is refused now, not in the middle of a run
  } catch (err) {
    throw new Error(`${dir}: ${(err as Error).message}`, { cause: err });
  }
  return { countTokens: (text) => tokenizer.encode(text).length, maxPositions };
}
