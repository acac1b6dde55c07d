import { describe, expect, it } from 'vitest';
import {
  floatToBf16Bits,
  indexSafetensors,
  isExactBf16,
  parseSafetensors,
  serializeSafetensors,
} from '../../../src/model/safetensors';

/** Builds a safetensors file by hand (independently of serializeSafetensors): header object + raw data bytes. */
function handMade(header: object, data: Uint8Array, padTo8 = true): Uint8Array {
  let json = JSON.stringify(header);
  if (padTo8) while (json.length % 8) json += ' ';
  const h = new TextEncoder().encode(json);
  const out = new Uint8Array(8 + h.length + data.length);
  new DataView(out.buffer).setBigUint64(0, BigInt(h.length), true);
  out.set(h, 8);
  out.set(data, 8 + h.length);
  return out;
}

/** Little-endian bytes of 16-bit words. */
function u16Bytes(words: number[]): Uint8Array {
  const b = new Uint8Array(words.length * 2);
  words.forEach((w, i) => {
    b[2 * i] = w & 0xff;
    b[2 * i + 1] = w >> 8;
  });
  return b;
}

function bitsOf(a: Float32Array): number[] {
  return Array.from(new Uint32Array(a.buffer, a.byteOffset, a.length));
}

describe('safetensors round trip', () => {
  it('is bit-exact for NaN payloads, -0, infinities, denormals and ordinary values', () => {
    const bits = new Uint32Array([
      0x7fc00000,
      0x7fc00001,
      0x7f800001,
      0xffc12345, // quiet/signalling NaNs with payloads
      0x80000000,
      0x00000000,
      0x7f800000,
      0xff800000, // -0, +0, +inf, -inf
      0x00000001,
      0x807fffff,
      0x00400000, // denormals
      0x3f800000,
      0xc2f6e979,
      0x3eaaaaab, // 1, -123.456, 1/3
    ]);
    const a = new Float32Array(bits.buffer);
    const b = Float32Array.from({ length: 6 }, (_, i) => i * 0.25 - 1);
    const file = serializeSafetensors(
      { 'z.weight': { shape: [2, 7], data: a }, 'a.bias': { shape: [6], data: b } },
      { format: 'pt' },
    );
    const parsed = parseSafetensors(file);
    expect(parsed.metadata).toEqual({ format: 'pt' });
    expect(parsed.tensors['z.weight'].shape).toEqual([2, 7]);
    expect(parsed.tensors['z.weight'].dtype).toBe('F32');
    expect(bitsOf(parsed.tensors['z.weight'].data)).toEqual(Array.from(bits));
    expect(Array.from(parsed.tensors['a.bias'].data)).toEqual(Array.from(b));
  });

  it('writes the layout Hugging Face writes: 8-byte aligned header padded with spaces, names sorted', () => {
    const file = serializeSafetensors({
      b: { shape: [1], data: new Float32Array([2]) },
      a: { shape: [1, 2], data: new Float32Array([0, 1]) },
      c: { shape: [], data: new Float32Array([3]) },
    });
    const n = Number(new DataView(file.buffer, file.byteOffset).getBigUint64(0, true));
    expect(n % 8).toBe(0);
    const headerText = new TextDecoder().decode(file.subarray(8, 8 + n));
    expect(headerText.trimEnd().endsWith('}')).toBe(true);
    expect(/^ *$/.test(headerText.slice(headerText.lastIndexOf('}') + 1))).toBe(true);
    const header = JSON.parse(headerText);
    expect(Object.keys(header)).toEqual(['a', 'b', 'c']);
    expect(header.a).toEqual({ dtype: 'F32', shape: [1, 2], data_offsets: [0, 8] });
    expect(header.b.data_offsets).toEqual([8, 12]);
    expect(header.c).toEqual({ dtype: 'F32', shape: [], data_offsets: [12, 16] });
    expect(file.length).toBe(8 + n + 16);
    // Data is little-endian float32 in name order.
    const dv = new DataView(file.buffer, file.byteOffset + 8 + n);
    expect([dv.getFloat32(0, true), dv.getFloat32(4, true), dv.getFloat32(8, true), dv.getFloat32(12, true)]).toEqual([
      0, 1, 2, 3,
    ]);
  });

  it('reads a file with zero-element tensors and no metadata', () => {
    const file = serializeSafetensors({ empty: { shape: [0, 3], data: new Float32Array(0) } });
    const parsed = parseSafetensors(file);
    expect(parsed.tensors.empty.shape).toEqual([0, 3]);
    expect(parsed.tensors.empty.data.length).toBe(0);
    expect(parsed.metadata).toEqual({});
  });

  it('does not alias the input bytes (tensors survive the file buffer being overwritten)', () => {
    const file = serializeSafetensors({ w: { shape: [2], data: new Float32Array([5, 6]) } });
    const parsed = parseSafetensors(file);
    file.fill(0);
    expect(Array.from(parsed.tensors.w.data)).toEqual([5, 6]);
  });

  it('reads a tensor whose data starts at an odd byte offset of the buffer', () => {
    const file = serializeSafetensors({ w: { shape: [3], data: new Float32Array([1.5, -2, 7]) } });
    const shifted = new Uint8Array(file.length + 1);
    shifted.set(file, 1);
    expect(Array.from(parseSafetensors(shifted.subarray(1)).tensors.w.data)).toEqual([1.5, -2, 7]);
  });
});

describe('safetensors index (validate first, decode on demand)', () => {
  it('lists names, dtypes and shapes, and decodes each tensor into its own copy when read', () => {
    const file = serializeSafetensors({
      a: { shape: [2], data: new Float32Array([1, 2]) },
      b: { shape: [1, 1], data: new Float32Array([3]) },
    });
    const { entries } = indexSafetensors(file);
    expect(Object.keys(entries).sort()).toEqual(['a', 'b']);
    expect(entries.b).toMatchObject({ dtype: 'F32', shape: [1, 1] });
    const first = entries.a.read();
    first[0] = 99;
    expect(Array.from(entries.a.read())).toEqual([1, 2]);
  });

  it('validates the whole file up front (a truncated file fails before anything is read)', () => {
    const file = serializeSafetensors({ a: { shape: [2], data: new Float32Array([1, 2]) } });
    expect(() => indexSafetensors(file.subarray(0, file.length - 1))).toThrow(/truncated.*tensor 'a'/);
  });
});

describe('safetensors 16-bit floats', () => {
  it('decodes BF16 (hand-computed: bf16 is the top 16 bits of a float32)', () => {
    // 0x3F80 = 1, 0xC000 = -2, 0x3FC0 = 1.5, 0x4049 = 3.140625, 0x7F80 = inf, 0x8000 = -0, 0x0001 = 2^-133
    const words = [0x3f80, 0xc000, 0x3fc0, 0x4049, 0x7f80, 0x8000, 0x0001, 0x7fc1];
    const file = handMade(
      { __metadata__: { format: 'pt' }, x: { dtype: 'BF16', shape: [2, 4], data_offsets: [0, 16] } },
      u16Bytes(words),
    );
    const t = parseSafetensors(file).tensors.x;
    expect(t.dtype).toBe('BF16');
    expect(t.shape).toEqual([2, 4]);
    const v = Array.from(t.data);
    expect(v.slice(0, 5)).toEqual([1, -2, 1.5, 3.140625, Infinity]);
    expect(Object.is(v[5], -0)).toBe(true);
    expect(v[6]).toBe(2 ** -133);
    expect(bitsOf(t.data)[7]).toBe(0x7fc10000); // NaN payload kept
  });

  it('decodes F16 including subnormals, the largest half, infinities and NaN', () => {
    const words = [0x3c00, 0xc000, 0x3555, 0x7bff, 0x0001, 0x03ff, 0x0400, 0x8000, 0x7c00, 0xfc00, 0x7e00, 0x3800];
    const expected = [
      1,
      -2,
      0.333251953125,
      65504,
      2 ** -24,
      (1023 / 1024) * 2 ** -14,
      2 ** -14,
      -0,
      Infinity,
      -Infinity,
      NaN,
      0.5,
    ];
    const file = handMade({ h: { dtype: 'F16', shape: [12], data_offsets: [0, 24] } }, u16Bytes(words));
    const v = Array.from(parseSafetensors(file).tensors.h.data);
    v.forEach((x, i) => expect(Object.is(x, expected[i]), `word 0x${words[i].toString(16)}: ${x}`).toBe(true));
  });

  it('decodes mixed dtypes in one file (F64, I64, U8 after a BF16 tensor)', () => {
    const data = new Uint8Array(4 + 16 + 8 + 2);
    data.set(u16Bytes([0x3f80, 0x4000]), 0);
    const dv = new DataView(data.buffer);
    dv.setFloat64(4, 0.1, true);
    dv.setFloat64(12, -3, true);
    dv.setBigInt64(20, -7n, true);
    data[28] = 3;
    data[29] = 250;
    const file = handMade(
      {
        a: { dtype: 'BF16', shape: [2], data_offsets: [0, 4] },
        b: { dtype: 'F64', shape: [2], data_offsets: [4, 20] },
        c: { dtype: 'I64', shape: [1], data_offsets: [20, 28] },
        d: { dtype: 'U8', shape: [2], data_offsets: [28, 30] },
      },
      data,
      false,
    );
    const t = parseSafetensors(file).tensors;
    expect(Array.from(t.a.data)).toEqual([1, 2]);
    expect(Array.from(t.b.data)).toEqual([Math.fround(0.1), -3]);
    expect(Array.from(t.c.data)).toEqual([-7]);
    expect(Array.from(t.d.data)).toEqual([3, 250]);
  });
});

describe('safetensors errors name the problem', () => {
  const good = serializeSafetensors({
    a: { shape: [2, 2], data: new Float32Array([1, 2, 3, 4]) },
    b: { shape: [3], data: new Float32Array([5, 6, 7]) },
  });

  it('a file shorter than the length field', () => {
    expect(() => parseSafetensors(new Uint8Array(5))).toThrow(/truncated.*8-byte header length/);
  });

  it('a header length past the end of the file', () => {
    expect(() => parseSafetensors(good.subarray(0, 30))).toThrow(/truncated.*header is \d+ bytes/);
  });

  it('data cut short: the error names the tensor whose bytes are missing', () => {
    expect(() => parseSafetensors(good.subarray(0, good.length - 4))).toThrow(/truncated.*tensor 'b'/);
  });

  it('extra bytes after the last tensor', () => {
    const longer = new Uint8Array(good.length + 4);
    longer.set(good);
    expect(() => parseSafetensors(longer)).toThrow(/4 bytes unaccounted/);
  });

  it('a tensor whose byte length does not match dtype x shape', () => {
    const file = handMade({ w: { dtype: 'F32', shape: [3], data_offsets: [0, 8] } }, new Uint8Array(8));
    expect(() => parseSafetensors(file)).toThrow(/mislabelled tensor 'w'.*needs 12 bytes.*span 8/);
    // A BF16 file labelled as F32 (the classic mix-up) is caught the same way.
    const bf = handMade({ w: { dtype: 'F32', shape: [4], data_offsets: [0, 8] } }, u16Bytes([1, 2, 3, 4]));
    expect(() => parseSafetensors(bf)).toThrow(/mislabelled tensor 'w'/);
  });

  it('overlapping and non-contiguous offsets', () => {
    const overlap = handMade(
      { a: { dtype: 'F32', shape: [2], data_offsets: [0, 8] }, b: { dtype: 'F32', shape: [2], data_offsets: [4, 12] } },
      new Uint8Array(12),
    );
    expect(() => parseSafetensors(overlap)).toThrow(/'b'.*overlap.*'a'/);
    const gap = handMade(
      { a: { dtype: 'F32', shape: [1], data_offsets: [0, 4] }, b: { dtype: 'F32', shape: [1], data_offsets: [8, 12] } },
      new Uint8Array(12),
    );
    expect(() => parseSafetensors(gap)).toThrow(/4 unaccounted bytes before tensor 'b'/);
  });

  it('a header that is not JSON, not an object, or has bad fields', () => {
    const notJson = handMade({}, new Uint8Array(0));
    notJson.set(new TextEncoder().encode('{"a": '), 8);
    expect(() => parseSafetensors(notJson)).toThrow(/bad JSON header/);
    expect(() => parseSafetensors(handMade([1, 2] as unknown as object, new Uint8Array(0)))).toThrow(
      /must be an object/,
    );
    expect(() =>
      parseSafetensors(handMade({ a: { dtype: 'F32', shape: [-1], data_offsets: [0, 0] } }, new Uint8Array(0))),
    ).toThrow(/'a' has an invalid shape/);
    expect(() =>
      parseSafetensors(handMade({ a: { dtype: 'F32', shape: [1], data_offsets: [4, 0] } }, new Uint8Array(4))),
    ).toThrow(/'a' has invalid data_offsets/);
    expect(() => parseSafetensors(handMade({ __metadata__: { n: 1 } }, new Uint8Array(0)))).toThrow(
      /__metadata__.n is not a string/,
    );
  });

  it('an unsupported dtype is refused by name', () => {
    const file = handMade({ q: { dtype: 'F8_E4M3', shape: [4], data_offsets: [0, 4] } }, new Uint8Array(4));
    expect(() => parseSafetensors(file)).toThrow(/'q' has unsupported dtype 'F8_E4M3'/);
  });

  it('serializing refuses a shape that does not match the data', () => {
    expect(() => serializeSafetensors({ w: { shape: [2, 2], data: new Float32Array(3) } })).toThrow(
      /'w' has shape \[2,2\] \(4 elements\) but 3 values/,
    );
  });
});

describe('safetensors BF16 writing (round to nearest, ties to even)', () => {
  const f32 = (bits: number) => new Float32Array(new Uint32Array([bits]).buffer)[0];

  it('rounds float32 bit patterns the way torch casts to bfloat16', () => {
    // [float32 bits, expected bfloat16 bits], worked out by hand from the rounding rule.
    const cases: [number, number][] = [
      [0x3f800000, 0x3f80], // 1: exact
      [0x3f808000, 0x3f80], // 1 + 2^-8: a tie, the even neighbour (mantissa ...0) wins: down
      [0x3f818000, 0x3f82], // 1 + 3*2^-8: a tie, the even neighbour is above: up
      [0x3f808001, 0x3f81], // just above the tie: up
      [0x3f807fff, 0x3f80], // just below the tie: down
      [0xbf80ffff, 0xbf81], // negative values round by magnitude
      [0x80000000, 0x8000], // -0 keeps its sign
      [0x7f7fffff, 0x7f80], // the largest float32 overflows to +inf
      [0xff800000, 0xff80], // -inf
      [0x00000001, 0x0000], // the smallest denormal rounds to +0
    ];
    for (const [bits, want] of cases) expect(floatToBf16Bits(bits), bits.toString(16)).toBe(want);
    // NaNs whose payload sits only in the dropped half stay NaNs (a plain truncation would make them infinite).
    for (const nan of [0x7f800001, 0xff800001, 0x7fc00000]) {
      const out = floatToBf16Bits(nan);
      expect(out & 0x7f80).toBe(0x7f80);
      expect(out & 0x007f).not.toBe(0);
    }
  });

  it('writes a BF16 file that reads back as the rounded values, at half the data size', () => {
    const values = Float32Array.from([1, f32(0x3f818000), -2.5, 1 / 3, 65504.7, -0, Infinity]);
    const f32File = serializeSafetensors({ w: { shape: [7], data: values } }, { format: 'pt' });
    const bf16File = serializeSafetensors({ w: { shape: [7], data: values } }, { format: 'pt' }, 'BF16');
    const parsed = parseSafetensors(bf16File);
    expect(parsed.metadata).toEqual({ format: 'pt' });
    expect(parsed.tensors.w.dtype).toBe('BF16');
    expect(parsed.tensors.w.shape).toEqual([7]);
    const expected = Array.from(new Uint32Array(values.buffer), (b) => floatToBf16Bits(b) << 16);
    expect(bitsOf(parsed.tensors.w.data)).toEqual(expected.map((b) => b >>> 0));
    expect(parsed.tensors.w.data[1]).toBe(f32(0x3f820000)); // the tie went up to the even neighbour
    expect(parsed.tensors.w.data[3]).toBeCloseTo(1 / 3, 2);
    expect(parsed.tensors.w.data[3]).not.toBe(Math.fround(1 / 3)); // really rounded, not copied
    const dataBytes = (file: Uint8Array) =>
      file.length - 8 - Number(new DataView(file.buffer, file.byteOffset).getBigUint64(0, true));
    expect(dataBytes(bf16File)).toBe(14);
    expect(dataBytes(f32File)).toBe(28);
  });

  it('refuses a dtype it cannot write', () => {
    expect(() =>
      serializeSafetensors({ w: { shape: [1], data: new Float32Array(1) } }, undefined, 'F16' as never),
    ).toThrow(/cannot write dtype 'F16'/);
    expect(() =>
      serializeSafetensors({ w: { shape: [1], data: new Float32Array(1), writeAs: 'F16' as never } }),
    ).toThrow(/cannot write dtype 'F16'/);
    expect(() => serializeSafetensors({}, undefined, 'F16' as never)).toThrow(/cannot write dtype 'F16'/); // even with no tensor
  });

  it('mixes dtypes in one file where a tensor says how it is written (writeAs), each read back as written', () => {
    const exact = Float32Array.from([1, -2.5, 0.15625, -0, Infinity]); // every value a bfloat16
    const inexact = Float32Array.from([1 / 3, 0.1, 1e-3]);
    const file = serializeSafetensors(
      { a: { shape: [5], data: exact, writeAs: 'BF16' }, b: { shape: [3], data: inexact } },
      { format: 'pt' },
    );
    const parsed = parseSafetensors(file);
    expect(parsed.tensors.a.dtype).toBe('BF16');
    expect(parsed.tensors.b.dtype).toBe('F32');
    expect(bitsOf(parsed.tensors.a.data)).toEqual(bitsOf(exact));
    expect(bitsOf(parsed.tensors.b.data)).toEqual(bitsOf(inexact));
    expect(file.length - 8 - Number(new DataView(file.buffer).getBigUint64(0, true))).toBe(5 * 2 + 3 * 4);
    // The file-wide dtype is the default a tensor's own overrides, either way round.
    expect(
      parseSafetensors(serializeSafetensors({ b: { shape: [3], data: inexact, writeAs: 'F32' } }, undefined, 'BF16'))
        .tensors.b.dtype,
    ).toBe('F32');
  });

  it('isExactBf16: true only when no value has bits in the half a bfloat16 drops', () => {
    expect(isExactBf16(Float32Array.from([1, -2.5, 0, -0, Infinity, -Infinity, 0.15625]))).toBe(true);
    expect(isExactBf16(new Float32Array(0))).toBe(true);
    expect(isExactBf16(Float32Array.from([1, 1 / 3]))).toBe(false);
    expect(isExactBf16(new Float32Array(new Uint32Array([0x3f800000, 0x3f800001]).buffer))).toBe(false); // one low bit
    // Values rounded to bfloat16 are exact ones.
    const rounded = new Float32Array(
      new Uint32Array(
        Array.from(
          new Uint32Array(Float32Array.from([1 / 3, 0.1, 7e-5]).buffer),
          (b) => (floatToBf16Bits(b) << 16) >>> 0,
        ),
      ).buffer,
    );
    expect(isExactBf16(rounded)).toBe(true);
  });
});

describe('safetensors read from a Node Buffer', () => {
  it('decodes each tensor from its own bytes, not from the start of a pooled buffer', () => {
    const file = serializeSafetensors({
      a: { shape: [2], data: new Float32Array([1, 2]) },
      b: { shape: [3], data: new Float32Array([3, 4, 5]) },
    });
    // A Buffer carved out of a larger pool, as fs.readFileSync returns small files.
    const pool = Buffer.alloc(file.length + 64, 0x7f);
    pool.set(file, 32);
    const buffer = pool.subarray(32, 32 + file.length);
    const parsed = parseSafetensors(buffer);
    expect(Array.from(parsed.tensors.a.data)).toEqual([1, 2]);
    expect(Array.from(parsed.tensors.b.data)).toEqual([3, 4, 5]);
    expect(parsed.tensors.b.data.length).toBe(3);
  });
});
