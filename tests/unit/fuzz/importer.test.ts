// Fuzzing the run-archive importer (it runs on the page's UI thread with a file the user picked): any bytes, any
// damage to a real archive, any metrics.jsonl text give either a run or one Error, quickly; never a hang, and
// never a checkpoint that is incomplete or truncated.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { serializeSafetensors } from '../../../src/model/safetensors';
import { presetConfig } from '../../../src/starpo/presets';
import { exportRunArchive, importRunFile, type RunContents } from '../../../src/ui/run-files';
import { fuzzParams } from './budget';

const bytes = (text: string) => new TextEncoder().encode(text);

const weights = serializeSafetensors({ w: { shape: [3], data: new Float32Array([1, 2, 3]) } });
const ARCHIVE = exportRunArchive({
  config: presetConfig('bandit-tiny'),
  rows: [
    { step: 0, 'val-env/Bandit/success': 0.5 },
    { step: 1, 'actor/grad_norm': 0.25 },
  ],
  rollouts: [{ step: 1, tag: 'Bandit', turns: [] }],
  checkpoint: {
    step: 1,
    files: {
      'config.json': bytes('{"model_type":"qwen2"}'),
      'model.safetensors': weights,
      'tokenizer.json': bytes('{"model":{"type":"BPE"}}'),
      'trainer_state.json': bytes('{"step":1}'),
      'critic/model.safetensors': weights,
    },
  },
});

/** Imports within a time bound; returns the run or null when it threw an Error (anything else fails the test). */
function importQuickly(name: string, data: Uint8Array): RunContents | null {
  const start = performance.now();
  try {
    return importRunFile(name, data);
  } catch (err) {
    expect(err, String(err)).toBeInstanceOf(Error);
    expect((err as Error).message.length).toBeGreaterThan(0);
    return null;
  } finally {
    expect(performance.now() - start).toBeLessThan(2_000);
  }
}

/** What an imported checkpoint must always be: complete, and every safetensors file whole. */
function checkpointIsSound(run: RunContents | null): void {
  if (!run?.checkpoint) return;
  for (const name of ['config.json', 'model.safetensors', 'tokenizer.json', 'trainer_state.json'])
    expect(run.checkpoint.files[name]).toBeDefined();
}

describe('importer fuzz', () => {
  it('the real archive imports', () => {
    const run = importRunFile('run.tar', ARCHIVE);
    expect(run.rows.map((r) => r.step)).toEqual([0, 1]);
    expect(run.checkpoint?.step).toBe(1);
  });

  it('a damaged archive (bytes overwritten, header fields rewritten, cut short) gives a run or one Error, quickly', () => {
    const damage = fc.oneof(
      // Overwrite a few bytes anywhere.
      fc
        .array(fc.tuple(fc.nat(ARCHIVE.length - 1), fc.nat(255)), { minLength: 1, maxLength: 8 })
        .map((edits) => (a: Uint8Array) => {
          for (const [at, b] of edits) a[at] = b;
          return a;
        }),
      // Rewrite a size field of some header (fixing its checksum, so the reader trusts the header) with any text.
      // Negative multiples of a block used to stall the old reader forever: keep them among the candidates.
      fc
        .tuple(
          fc.nat(20),
          fc.oneof(
            fc.constantFrom('-1000', '-0000001000', '-2000', '-1', '9', 'zz', '', ' 17 ', '77777777777'),
            fc.stringMatching(new RegExp(`^[-0-9a-z ${String.fromCharCode(0)}]{0,12}$`)),
          ),
        )
        .map(([nth, text]) => (a: Uint8Array) => {
          const headers: number[] = [];
          for (let at = 0; at + 512 <= a.length; at += 512)
            if (a[at + 257] === 0x75 /* 'u' of ustar */) headers.push(at);
          const at = headers[nth % headers.length];
          a.fill(0, at + 124, at + 136);
          a.set(bytes(text).subarray(0, 12), at + 124);
          a.fill(0x20, at + 148, at + 156);
          const sum = a.subarray(at, at + 512).reduce((s, v) => s + v, 0);
          a.set(bytes(sum.toString(8).padStart(6, '0') + '\0 '), at + 148);
          return a;
        }),
      // Cut it short.
      fc.nat(ARCHIVE.length).map((n) => (a: Uint8Array) => a.subarray(0, n)),
    );
    fc.assert(
      fc.property(damage, (hurt) => checkpointIsSound(importQuickly('run.tar', hurt(ARCHIVE.slice())))),
      fuzzParams(800, 15_000),
    );
  });

  it('random bytes as a .tar and random text as a metrics.jsonl give a run or one Error', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 3000 }), (data) => void importQuickly('x.tar', data)),
      fuzzParams(500, 5_000),
    );
    const line = fc.oneof(
      fc.constantFrom(
        '{"step":1}',
        '{"step":2,"a":null}',
        '{"step":-1}',
        '{"step":"1"}',
        '{"x":1}',
        '[]',
        'null',
        '{"step":1,"a":"b"}',
        '{"step":1e400}',
        '',
      ),
      fc.json(),
    );
    fc.assert(
      fc.property(
        fc.array(line, { maxLength: 6 }),
        (lines) => void importQuickly('metrics.jsonl', bytes(lines.join('\n'))),
      ),
      fuzzParams(1000, 5_000),
    );
  });
});
