// Derives the list of RAGEN config key names that the project's RAGEN reference (spec/ragen-reference.md, kept
// outside this repository) spells out, so that tests can check every key `ragen export --to ragen` emits against it.
//
//   npx tsx tools/ragen/spec-keys.ts PATH/TO/ragen-reference.md > tests/fixtures/ragen/spec-keys.json
//
// What counts as a key name (the spec is prose, so this errs on the side of including names):
//   * every dotted path written in backticks, e.g. `es_manager.train.env_groups` (stored whole in `paths`);
//   * every identifier inside backticks, and every segment of those dotted paths (`names`);
//   * every snake_case identifier anywhere in the text (config keys are snake_case: `top_p`, `do_sample`);
//   * every identifier in the Key column of the defaults table (§5.1), where keys are written plainly
//     ("temperature / top_p / top_k", "actor / critic lr"), and its Area column lower-cased, which names the config
//     section the row's keys live in ("Trainer" -> trainer.total_training_steps, "Optim" -> actor.optim.lr).
import * as fs from 'node:fs';

export interface SpecKeys {
  /** Dotted key paths the spec writes whole, e.g. "algorithm.kl_ctrl.kl_coef". */
  paths: string[];
  /** Single key names, e.g. "clip_ratio_high", "temperature". */
  names: string[];
}

const IDENT = /[A-Za-z_][A-Za-z0-9_]*/g;
const DOTTED = /[A-Za-z_<][A-Za-z0-9_<>/]*(?:\.[A-Za-z_<][A-Za-z0-9_<>/]*)+/g;

export function extractSpecKeys(text: string): SpecKeys {
  const paths = new Set<string>();
  const names = new Set<string>();
  for (const [, span] of text.matchAll(/`([^`\n]+)`/g)) {
    for (const [dotted] of span.matchAll(DOTTED)) {
      if (/\.(ts|py|yaml|md|sh|json|parquet)$/.test(dotted)) continue; // file names, not keys
      paths.add(dotted);
      for (const segment of dotted.split('.')) for (const [id] of segment.matchAll(IDENT)) names.add(id);
    }
    for (const [id] of span.matchAll(IDENT)) names.add(id);
  }
  for (const [id] of text.matchAll(IDENT)) if (id.includes('_') && !/^_+$/.test(id)) names.add(id);
  const table = /^### 5\.1[^\n]*\n([\s\S]*?)(?=\n### )/m.exec(text);
  if (table) {
    for (const line of table[1].split('\n')) {
      const cells = line.split('|');
      if (cells.length < 4 || /^-+$/.test(cells[2].trim())) continue;
      for (const [id] of cells[2].matchAll(IDENT)) names.add(id);
      for (const [id] of cells[1].matchAll(IDENT)) names.add(id.toLowerCase());
    }
  }
  return { paths: [...paths].sort(), names: [...names].sort() };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const file = process.argv[2];
  if (!file || !fs.existsSync(file)) {
    console.error(
      'usage: npx tsx tools/ragen/spec-keys.ts PATH/TO/ragen-reference.md > tests/fixtures/ragen/spec-keys.json',
    );
    process.exit(2);
  }
  process.stdout.write(JSON.stringify(extractSpecKeys(fs.readFileSync(file, 'utf8')), null, 1) + '\n');
}
