// Run export / import: the archive must be a real tar (checked with the system's tar) in the CLI's layout.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { MetricRow } from '../../../src/metrics/jsonl';
import { presetConfig } from '../../../src/starpo/presets';
import { serializeSafetensors } from '../../../src/model/safetensors';
import { exportRunArchive, importRunFile } from '../../../src/ui/run-files';
import { readTar, writeTar } from '../../../src/ui/tar';

const dir = mkdtempSync(join(tmpdir(), 'ui-tar-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const bytes = (text: string) => new TextEncoder().encode(text);

/** The files of a complete (tiny, fake-weight) trainer checkpoint: what the importer checks, not a loadable model. */
function checkpointFiles(tag: number): Record<string, Uint8Array> {
  const weights = serializeSafetensors({ w: { shape: [2], data: new Float32Array([tag, 1]) } });
  return {
    'config.json': bytes('{"model_type":"qwen2"}'),
    'model.safetensors': weights,
    'tokenizer.json': bytes('{"model":{"type":"BPE"}}'),
    'trainer_state.json': bytes(`{"step":${tag}}`),
    'critic/model.safetensors': weights,
  };
}

/** `archive` with one header field of the entry at `at` replaced by `text` and the checksum fixed up. */
function patchHeader(archive: Uint8Array, at: number, offset: number, length: number, text: string): Uint8Array {
  const out = archive.slice();
  const header = out.subarray(at, at + 512);
  header.fill(0, offset, offset + length);
  header.set(bytes(text), offset);
  header.fill(0x20, 148, 156);
  const sum = header.reduce((a, b) => a + b, 0);
  header.set(bytes(sum.toString(8).padStart(6, '0') + '\0 '), 148);
  return out;
}

describe('tar', () => {
  it('writes archives that GNU tar lists and extracts byte for byte, including long paths', () => {
    const long = `checkpoints/${'deep/'.repeat(25)}model.safetensors`; // > 100 bytes: needs the ustar prefix
    const big = new Uint8Array(1300).map((_, i) => (i * 7) % 256);
    const archive = writeTar([
      { path: 'metrics.jsonl', bytes: bytes('{"step":1}\n') },
      { path: long, bytes: big },
      { path: 'empty', bytes: new Uint8Array() },
    ]);
    const file = join(dir, 'a.tar');
    writeFileSync(file, archive);
    expect(execFileSync('tar', ['-tf', file], { encoding: 'utf8' }).trim().split('\n')).toEqual([
      'metrics.jsonl',
      long,
      'empty',
    ]);
    execFileSync('tar', ['-xf', file, '-C', dir]);
    expect(new Uint8Array(readFileSync(join(dir, long)))).toEqual(big);
    const back = readTar(archive);
    expect(back.get(long)).toEqual(big);
    expect(new TextDecoder().decode(back.get('metrics.jsonl'))).toBe('{"step":1}\n');
  });

  it('reads an archive made by GNU tar', () => {
    writeFileSync(join(dir, 'hello.txt'), 'hello\n');
    execFileSync('tar', ['--format=ustar', '-cf', join(dir, 'b.tar'), '-C', dir, 'hello.txt']);
    const files = readTar(new Uint8Array(readFileSync(join(dir, 'b.tar'))));
    expect(new TextDecoder().decode(files.get('hello.txt'))).toBe('hello\n');
  });

  it('rejects a file that is not a tar, and unsafe paths', () => {
    expect(() => readTar(bytes('x'.repeat(1024)))).toThrow(/bad header checksum at byte 0/);
    expect(() => writeTar([{ path: '../evil', bytes: new Uint8Array() }])).toThrow(/unsafe path/);
  });

  it('refuses a negative or non-octal size instead of looping or misreading (one Error naming the offset)', () => {
    const archive = writeTar([
      { path: 'a.txt', bytes: bytes('hello') },
      { path: 'metrics.jsonl', bytes: bytes('{"step":1}\n') },
    ]);
    // A negative size used to move the read position backwards forever (on the page's UI thread).
    expect(() => readTar(patchHeader(archive, 0, 124, 12, '-0000001000'))).toThrow(
      /bad size field "-0000001000" in the header at byte 0/,
    );
    // A non-octal size used to be read as 0, so the archive's metrics.jsonl went missing.
    expect(() => readTar(patchHeader(archive, 0, 124, 12, '0000000009x'))).toThrow(/bad size field "0000000009x"/);
    expect(() => readTar(patchHeader(archive, 0, 124, 12, '\x80\0\0\0\0\0\0\0\0\0\0\x05'))).toThrow(/bad size field/);
    expect(() => readTar(patchHeader(archive, 1024, 124, 12, '77777777777'))).toThrow(/'metrics\.jsonl' is cut off/);
    expect(() => importRunFile('x.tar', patchHeader(archive, 0, 124, 12, '0000000009x'))).toThrow(/bad size field/);
  });

  it('reads the long names of GNU and pax archives', () => {
    const long = `runs/${'deep/'.repeat(25)}metrics.jsonl`;
    const src = join(dir, 'long');
    execFileSync('mkdir', ['-p', join(src, ...long.split('/').slice(0, -1))]);
    writeFileSync(join(src, long), '{"step":1}\n');
    for (const format of ['gnu', 'pax']) {
      const file = join(dir, `long-${format}.tar`);
      execFileSync('tar', [`--format=${format}`, '-cf', file, '-C', src, 'runs']);
      const files = readTar(new Uint8Array(readFileSync(file)));
      expect(new TextDecoder().decode(files.get(long))).toBe('{"step":1}\n');
    }
  });
});

describe('run export and import', () => {
  const config = presetConfig('bandit-tiny');
  const rows: MetricRow[] = [
    { step: 1, 'actor/grad_norm': 0.5, 'actor/ppo_kl': NaN },
    { step: 2, 'actor/grad_norm': 0.25 },
  ];
  const rollouts = [{ step: 2, tag: 'Bandit', turns: [] }];
  const checkpoint = { step: 2, files: checkpointFiles(2) };

  it('round-trips config, metrics (NaN as null), rollouts and the checkpoint in the CLI layout', () => {
    const archive = exportRunArchive({ config, rows, rollouts, checkpoint });
    const file = join(dir, 'run.tar');
    writeFileSync(file, archive);
    const listed = execFileSync('tar', ['-tf', file], { encoding: 'utf8' }).trim().split('\n');
    expect(listed).toEqual([
      'config.json',
      'metrics.jsonl',
      'rollouts.jsonl',
      ...Object.keys(checkpoint.files).map((f) => `checkpoints/step-2/${f}`),
    ]);
    expect(execFileSync('tar', ['-xOf', file, 'metrics.jsonl'], { encoding: 'utf8' })).toBe(
      '{"step":1,"actor/grad_norm":0.5,"actor/ppo_kl":null}\n{"step":2,"actor/grad_norm":0.25}\n',
    );
    const back = importRunFile('run.tar', archive);
    expect(back.config).toEqual(config);
    expect(back.rows[0]['actor/ppo_kl']).toBeNaN();
    expect(back.rows[1]).toEqual(rows[1]);
    expect(back.rollouts).toEqual(rollouts);
    expect(back.checkpoint).toEqual(checkpoint);
  });

  it('imports a run directory archived under a top folder, keeping only the latest checkpoint', () => {
    const runDir = join(dir, 'runs', 'abc');
    execFileSync('mkdir', ['-p', join(runDir, 'checkpoints', 'step-5'), join(runDir, 'checkpoints', 'step-10')]);
    writeFileSync(join(runDir, 'metrics.jsonl'), '{"step":1,"actor/grad_norm":1}\n');
    for (const step of [5, 10]) {
      for (const [name, data] of Object.entries(checkpointFiles(step))) {
        execFileSync('mkdir', ['-p', join(runDir, 'checkpoints', `step-${step}`, 'critic')]);
        writeFileSync(join(runDir, 'checkpoints', `step-${step}`, name), data);
      }
    }
    execFileSync('tar', ['--format=ustar', '-cf', join(dir, 'c.tar'), '-C', join(dir, 'runs'), 'abc']);
    const back = importRunFile('c.tar', new Uint8Array(readFileSync(join(dir, 'c.tar'))));
    expect(back.rows).toEqual([{ step: 1, 'actor/grad_norm': 1 }]);
    expect(back.config).toBeNull();
    expect(back.checkpoint?.step).toBe(10);
    expect(new TextDecoder().decode(back.checkpoint?.files['trainer_state.json'])).toBe('{"step":10}');
  });

  it('refuses a truncated or incomplete checkpoint, and passes over a newer folder that was never completed', () => {
    const metrics = { path: 'metrics.jsonl', bytes: bytes('{"step":1}\n') };
    const archive = (files: Record<string, Uint8Array>, step = 4) =>
      writeTar([
        metrics,
        ...Object.entries(files).map(([name, b]) => ({ path: `checkpoints/step-${step}/${name}`, bytes: b })),
      ]);
    const good = checkpointFiles(4);
    const truncated = {
      ...good,
      'model.safetensors': good['model.safetensors'].subarray(0, good['model.safetensors'].length - 3),
    };
    expect(() => importRunFile('t.tar', archive(truncated))).toThrow(
      /t\.tar: checkpoints\/step-4\/model\.safetensors is damaged: safetensors: truncated file/,
    );
    expect(() => importRunFile('t.tar', archive({ 'config.json': bytes('{}') }))).toThrow(
      /t\.tar: checkpoints\/step-4 is incomplete: it has no model\.safetensors, tokenizer\.json, trainer_state\.json/,
    );
    expect(() => importRunFile('t.tar', archive({ ...good, 'trainer_state.json': bytes('{"step":') }))).toThrow(
      /step-4\/trainer_state\.json is not valid JSON/,
    );
    // A newer step folder without trainer_state.json is not a checkpoint (the CLI's --resume skips it too).
    const both = writeTar([
      metrics,
      ...Object.entries(good).map(([name, b]) => ({ path: `checkpoints/step-4/${name}`, bytes: b })),
      { path: 'checkpoints/step-6/config.json', bytes: bytes('{}') },
    ]);
    expect(importRunFile('t.tar', both).checkpoint?.step).toBe(4);
  });

  it('imports a CLI metrics.jsonl and names the bad line of a broken one', () => {
    expect(importRunFile('metrics.jsonl', bytes('{"step":3,"x":null}\n')).rows[0].x).toBeNaN();
    expect(() => importRunFile('metrics.jsonl', bytes('{"step":1}\nnot json\n{"step":2}\n'))).toThrow(
      /metrics.jsonl: line 2 is not valid JSON/,
    );
    expect(() => importRunFile('notes.txt', bytes(''))).toThrow(
      /expected a run archive \(\.tar\), a metrics\.jsonl, or a RAGEN W&B history export \(\.csv, \.json\)/,
    );
    expect(() => importRunFile('x.tar', writeTar([{ path: 'a', bytes: bytes('') }]))).toThrow(/has no metrics\.jsonl/);
  });
});
