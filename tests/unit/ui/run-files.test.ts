// Run export / import: the archive must be a real tar (checked with the system's tar) in the CLI's layout.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { MetricRow } from '../../../src/metrics/jsonl';
import { presetConfig } from '../../../src/starpo/presets';
import { exportRunArchive, importRunFile } from '../../../src/ui/run-files';
import { readTar, writeTar } from '../../../src/ui/tar';

const dir = mkdtempSync(join(tmpdir(), 'ui-tar-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const bytes = (text: string) => new TextEncoder().encode(text);

describe('tar', () => {
  it('writes archives that GNU tar lists and extracts byte for byte, including long paths', () => {
    const long = `checkpoints/${'deep/'.repeat(25)}model.safetensors`; // > 100 bytes: needs the ustar prefix
    const big = new Uint8Array(1300).map((_, i) => (i * 7) % 256);
    const archive = writeTar([{ path: 'metrics.jsonl', bytes: bytes('{"step":1}\n') }, { path: long, bytes: big }, { path: 'empty', bytes: new Uint8Array() }]);
    const file = join(dir, 'a.tar');
    writeFileSync(file, archive);
    expect(execFileSync('tar', ['-tf', file], { encoding: 'utf8' }).trim().split('\n')).toEqual(['metrics.jsonl', long, 'empty']);
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
});

describe('run export and import', () => {
  const config = presetConfig('bandit-tiny');
  const rows: MetricRow[] = [{ step: 1, 'actor/grad_norm': 0.5, 'actor/ppo_kl': NaN }, { step: 2, 'actor/grad_norm': 0.25 }];
  const rollouts = [{ step: 2, tag: 'Bandit', turns: [] }];
  const checkpoint = { step: 2, files: { 'config.json': bytes('{}'), 'model.safetensors': new Uint8Array([1, 2, 3]), 'critic/model.safetensors': new Uint8Array([4]) } };

  it('round-trips config, metrics (NaN as null), rollouts and the checkpoint in the CLI layout', () => {
    const archive = exportRunArchive({ config, rows, rollouts, checkpoint });
    const file = join(dir, 'run.tar');
    writeFileSync(file, archive);
    const listed = execFileSync('tar', ['-tf', file], { encoding: 'utf8' }).trim().split('\n');
    expect(listed).toEqual(['config.json', 'metrics.jsonl', 'rollouts.jsonl', 'checkpoints/step-2/config.json', 'checkpoints/step-2/model.safetensors', 'checkpoints/step-2/critic/model.safetensors']);
    expect(execFileSync('tar', ['-xOf', file, 'metrics.jsonl'], { encoding: 'utf8' })).toBe('{"step":1,"actor/grad_norm":0.5,"actor/ppo_kl":null}\n{"step":2,"actor/grad_norm":0.25}\n');
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
    writeFileSync(join(runDir, 'checkpoints', 'step-5', 'model.safetensors'), 'old');
    writeFileSync(join(runDir, 'checkpoints', 'step-10', 'model.safetensors'), 'new');
    execFileSync('tar', ['--format=ustar', '-cf', join(dir, 'c.tar'), '-C', join(dir, 'runs'), 'abc']);
    const back = importRunFile('c.tar', new Uint8Array(readFileSync(join(dir, 'c.tar'))));
    expect(back.rows).toEqual([{ step: 1, 'actor/grad_norm': 1 }]);
    expect(back.config).toBeNull();
    expect(back.checkpoint?.step).toBe(10);
    expect(new TextDecoder().decode(back.checkpoint?.files['model.safetensors'])).toBe('new');
  });

  it('imports a CLI metrics.jsonl and names the bad line of a broken one', () => {
    expect(importRunFile('metrics.jsonl', bytes('{"step":3,"x":null}\n')).rows[0].x).toBeNaN();
    expect(() => importRunFile('metrics.jsonl', bytes('{"step":1}\nnot json\n{"step":2}\n'))).toThrow(/metrics.jsonl: line 2 is not valid JSON/);
    expect(() => importRunFile('notes.txt', bytes(''))).toThrow(/expected a run archive \(\.tar\), a metrics\.jsonl, or a RAGEN W&B history export \(\.csv, \.json\)/);
    expect(() => importRunFile('x.tar', writeTar([{ path: 'a', bytes: bytes('') }]))).toThrow(/has no metrics\.jsonl/);
  });
});
