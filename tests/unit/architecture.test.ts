// The layers of docs/architecture.md ("Layers and what may import what"), checked on every source file of the
// product: which folders each folder may import from, where tfjs may not go, and which files may use Node's
// modules (the rest must run in a browser too).
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = path.join(__dirname, '../..');

/** Folder -> the folders of ours it may import from (docs/architecture.md's table). */
const MAY_IMPORT: Record<string, readonly string[]> = {
  envs: [],
  'src/metrics': [],
  'src/model': [],
  'src/agent': ['envs'],
  'src/starpo': ['envs', 'src/agent', 'src/model', 'src/metrics'],
  'src/node': ['src/starpo', 'src/metrics'],
  'src/interop': ['envs', 'src/model', 'src/metrics', 'src/starpo'],
  'src/eval': ['envs', 'src/agent', 'src/model', 'src/metrics', 'src/starpo', 'src/node'],
  'src/warmstart': ['envs', 'src/agent', 'src/model', 'src/metrics', 'src/starpo'],
  'src/bench': ['envs', 'src/agent', 'src/model', 'src/metrics', 'src/starpo', 'src/node', 'src/eval'],
  'src/cli': [
    'envs',
    'src/agent',
    'src/model',
    'src/metrics',
    'src/starpo',
    'src/node',
    'src/interop',
    'src/eval',
    'src/warmstart',
    'src/bench',
  ],
  workers: ['envs', 'src/agent', 'src/model', 'src/metrics', 'src/starpo', 'src/interop', 'src/eval', 'src/warmstart'],
  'src/ui': ['envs', 'src/model', 'src/metrics', 'src/starpo', 'src/interop', 'workers'],
};
const NO_TFJS = ['envs', 'src/agent', 'src/metrics'];
/** Where `node:*` modules may be imported: whole folders, and single Node-only files elsewhere. */
const NODE_FOLDERS = ['src/cli', 'src/bench', 'src/node'];
const NODE_FILES = [
  'src/metrics/jsonlSink.ts',
  'src/model/checkpointDir.ts',
  'src/model/initModel.ts',
  'src/model/modelContext.ts',
  'src/model/webgpuProbe.ts',
  'src/eval/episodeFile.ts',
  'src/model/parallelNormal.ts',
  'src/model/qwenTokenizer.ts',
  'src/eval/load.ts',
  'src/interop/exportReadme.ts',
];

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((e) => {
    const rel = `${dir}/${e.name}`;
    if (e.isDirectory()) return sourceFiles(rel);
    return /\.(ts|mts|mjs|svelte)$/.test(e.name) && !e.name.endsWith('.d.ts') ? [rel] : [];
  });
}

/** The folder of MAY_IMPORT a repository path belongs to, or null (outside the product). */
function layerOf(rel: string): string | null {
  return Object.keys(MAY_IMPORT).find((layer) => rel === layer || rel.startsWith(`${layer}/`)) ?? null;
}

/** Every module specifier a file imports or re-exports (static and dynamic). */
function importsOf(text: string): string[] {
  return [
    ...text.matchAll(
      /(?:^|[\s;])(?:import|export)\s[^'"`;]*?from\s*['"]([^'"]+)['"]|import\s*\(\s*['"]([^'"]+)['"]\s*\)|^\s*import\s+['"]([^'"]+)['"]/gm,
    ),
  ].map((m) => m[1] ?? m[2] ?? m[3]);
}

const files = Object.keys(MAY_IMPORT).flatMap(sourceFiles);

describe('the layers of docs/architecture.md', () => {
  it('finds the source files', () => {
    expect(files.length).toBeGreaterThan(150);
    expect(files).toContain('src/starpo/trainer.ts');
  });

  it('no folder imports from a folder its row does not list', () => {
    const wrong: string[] = [];
    for (const file of files) {
      const from = layerOf(file)!;
      for (const spec of importsOf(fs.readFileSync(path.join(ROOT, file), 'utf8'))) {
        if (!spec.startsWith('.')) continue;
        const target = path.posix.normalize(path.posix.join(path.posix.dirname(file), spec));
        const to = layerOf(target);
        if (to === null) wrong.push(`${file} imports ${spec}, outside the product`);
        else if (to !== from && !MAY_IMPORT[from].includes(to)) wrong.push(`${file} (${from}) imports ${spec} (${to})`);
      }
    }
    expect(wrong).toEqual([]);
  });

  it('tfjs stays out of envs/, src/agent/ and src/metrics/; Node modules stay in the Node-only places', () => {
    const wrong: string[] = [];
    for (const file of files) {
      const specs = importsOf(fs.readFileSync(path.join(ROOT, file), 'utf8'));
      const layer = layerOf(file)!;
      if (NO_TFJS.includes(layer) && specs.some((s) => s.startsWith('@tensorflow/')))
        wrong.push(`${file} imports tfjs`);
      const nodeOk = NODE_FOLDERS.includes(layer) || NODE_FILES.includes(file);
      if (!nodeOk && specs.some((s) => s.startsWith('node:'))) wrong.push(`${file} imports a Node module`);
    }
    expect(wrong).toEqual([]);
  });
});
