// The safetensors file format (Hugging Face's weight files), read and written without dependencies.
//
// Layout: 8 bytes little-endian u64 N | N bytes of JSON header | data.
// The header maps each tensor name to { dtype, shape, data_offsets: [begin, end] } (offsets relative to the start of
// the data section) and may carry "__metadata__": { string: string }. Tensors tile the data section exactly, with no
// gaps and no overlaps, and the header is padded with spaces to a multiple of 8 bytes.
//
// tfjs has no 16-bit float dtype, so every tensor is returned as a Float32Array: BF16 and F16 (Qwen2.5 ships BF16)
// are widened exactly, integer types are converted to the nearest float32. We write F32 (lossless, the default) or
// BF16 (what Qwen2.5 ships, half the size; each float32 rounded to the nearest bfloat16, ties to even, as torch's
// `.to(torch.bfloat16)` does).

/** One tensor as read from a file: `dtype` is the file's dtype (e.g. 'BF16'); `data` is always float32. */
export interface SafetensorsTensor {
  dtype: string;
  shape: number[];
  data: Float32Array;
}

/** One tensor to write. `data.length` must equal the product of `shape`. */
export interface SafetensorsInput {
  shape: number[];
  data: Float32Array;
  /** The dtype to write this tensor as, where it differs from the file's (a file may mix them, as Hugging Face's do). */
  writeAs?: SafetensorsWriteDtype;
}

/** Bytes per element of each dtype we can read. Anything else (F8_*, complex, ...) is refused by name. */
const DTYPE_BYTES: Record<string, number> = {
  BOOL: 1,
  U8: 1,
  I8: 1,
  I16: 2,
  U16: 2,
  F16: 2,
  BF16: 2,
  I32: 4,
  U32: 4,
  F32: 4,
  I64: 8,
  U64: 8,
  F64: 8,
};

const HOST_IS_LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;

/** One tensor of an indexed file: header facts now, float32 data on demand (decoding copies out of the file). */
export interface SafetensorsEntry {
  dtype: string;
  shape: number[];
  read(): Float32Array;
}

/**
 * Validates a .safetensors file and lists its tensors without decoding any data, so a loader can check names and
 * shapes first and then convert one tensor at a time (keeping peak memory near file size + one tensor).
 * Every problem (truncation, a mislabelled tensor, a bad header) throws an Error naming it.
 */
export function indexSafetensors(bytes: Uint8Array): {
  entries: Record<string, SafetensorsEntry>;
  metadata: Record<string, string>;
} {
  if (!(bytes instanceof Uint8Array)) throw new Error('safetensors: expected the file as a Uint8Array');
  if (bytes.length < 8) {
    throw new Error(`safetensors: truncated file: ${bytes.length} bytes is shorter than the 8-byte header length`);
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const headerLength = Number(view.getBigUint64(0, true));
  if (8 + headerLength > bytes.length) {
    throw new Error(
      `safetensors: truncated file: the header is ${headerLength} bytes but the file has only ` +
        `${bytes.length - 8} bytes after the length field`,
    );
  }
  const header = parseHeader(bytes.subarray(8, 8 + headerLength));
  const data = bytes.subarray(8 + headerLength);

  const metadata: Record<string, string> = {};
  const found: { name: string; dtype: string; shape: number[]; begin: number; end: number }[] = [];
  for (const [name, raw] of Object.entries(header)) {
    if (name === '__metadata__') {
      if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
        throw new Error('safetensors: bad header: __metadata__ must be an object of strings');
      }
      for (const [k, v] of Object.entries(raw as Record<string, unknown>)) {
        if (typeof v !== 'string') throw new Error(`safetensors: bad header: __metadata__.${k} is not a string`);
        metadata[k] = v;
      }
      continue;
    }
    found.push({ name, ...checkEntry(name, raw) });
  }

  // Tensors must tile the data section: sorted by offset, each starts where the previous ended.
  const byOffset = [...found].sort((a, b) => a.begin - b.begin || a.end - b.end);
  let expectedBegin = 0;
  let previous = '';
  for (const e of byOffset) {
    if (e.end > data.length) {
      throw new Error(
        `safetensors: truncated file: tensor '${e.name}' needs data bytes [${e.begin}, ${e.end}) but ` +
          `the data section has only ${data.length} bytes`,
      );
    }
    if (e.begin < expectedBegin) {
      throw new Error(
        `safetensors: mislabelled file: tensor '${e.name}' data_offsets [${e.begin}, ${e.end}) overlap ` +
          `tensor '${previous}' (which ends at ${expectedBegin})`,
      );
    }
    if (e.begin > expectedBegin) {
      throw new Error(
        `safetensors: mislabelled file: ${e.begin - expectedBegin} unaccounted bytes before tensor ` +
          `'${e.name}' (data_offsets start at ${e.begin}, expected ${expectedBegin})`,
      );
    }
    expectedBegin = e.end;
    previous = e.name;
  }
  if (expectedBegin !== data.length) {
    throw new Error(
      `safetensors: mislabelled file: the tensors cover ${expectedBegin} data bytes but the data section ` +
        `has ${data.length} (${data.length - expectedBegin} bytes unaccounted for)`,
    );
  }

  const entries: Record<string, SafetensorsEntry> = {};
  for (const e of found) {
    entries[e.name] = { dtype: e.dtype, shape: e.shape, read: () => decode(e.dtype, data.subarray(e.begin, e.end)) };
  }
  return { entries, metadata };
}

/** Parses a .safetensors file, decoding every tensor to float32 (see indexSafetensors for the checks). */
export function parseSafetensors(bytes: Uint8Array): {
  tensors: Record<string, SafetensorsTensor>;
  metadata: Record<string, string>;
} {
  const { entries, metadata } = indexSafetensors(bytes);
  const tensors: Record<string, SafetensorsTensor> = {};
  for (const [name, e] of Object.entries(entries)) tensors[name] = { dtype: e.dtype, shape: e.shape, data: e.read() };
  return { tensors, metadata };
}

/** The dtypes serializeSafetensors writes. */
export type SafetensorsWriteDtype = 'F32' | 'BF16';

/**
 * Writes tensors as a safetensors file the way Hugging Face's writer does: names sorted, data laid out in that
 * order, header padded with spaces to a multiple of 8 bytes. F32 copies values bit for bit (NaN payloads, -0);
 * BF16 rounds each value to the nearest bfloat16, ties to even (see floatToBf16Bits).
 */
export function serializeSafetensors(
  tensors: Record<string, SafetensorsInput>,
  metadata?: Record<string, string>,
  dtype: SafetensorsWriteDtype = 'F32',
): Uint8Array {
  const names = Object.keys(tensors).sort();
  // Each tensor's dtype: its own (writeAs) or the file's.
  const dtypes = new Map(names.map((name) => [name, tensors[name].writeAs ?? dtype]));
  for (const d of [dtype, ...dtypes.values()]) {
    if (d !== 'F32' && d !== 'BF16') throw new Error(`safetensors: cannot write dtype '${String(d)}' (F32 or BF16)`);
  }
  const header: Record<string, unknown> = {};
  if (metadata && Object.keys(metadata).length > 0) {
    for (const [k, v] of Object.entries(metadata)) {
      if (typeof v !== 'string') throw new Error(`safetensors: metadata value '${k}' must be a string`);
    }
    header.__metadata__ = metadata;
  }
  let offset = 0;
  for (const name of names) {
    if (name === '__metadata__') throw new Error("safetensors: '__metadata__' is reserved and cannot name a tensor");
    const { shape, data } = tensors[name];
    if (!(data instanceof Float32Array)) throw new Error(`safetensors: tensor '${name}' data must be a Float32Array`);
    checkShape(name, shape);
    const count = shape.reduce((a, b) => a * b, 1);
    if (count !== data.length) {
      throw new Error(
        `safetensors: tensor '${name}' has shape [${shape}] (${count} elements) but ${data.length} values`,
      );
    }
    const byteLength = data.length * bytesPerValueOf(dtypes.get(name)!);
    header[name] = { dtype: dtypes.get(name), shape: [...shape], data_offsets: [offset, offset + byteLength] };
    offset += byteLength;
  }

  const json = new TextEncoder().encode(JSON.stringify(header));
  const padded = Math.ceil(json.length / 8) * 8;
  const out = new Uint8Array(8 + padded + offset);
  new DataView(out.buffer).setBigUint64(0, BigInt(padded), true);
  out.set(json, 8);
  out.fill(0x20, 8 + json.length, 8 + padded);
  let at = 8 + padded;
  for (const name of names) {
    const { data } = tensors[name];
    const raw =
      dtypes.get(name) === 'F32' ? new Uint8Array(data.buffer, data.byteOffset, data.byteLength) : bf16Bytes(data);
    out.set(raw, at);
    if (!HOST_IS_LITTLE_ENDIAN) swapBytes(out.subarray(at, at + raw.length), bytesPerValueOf(dtypes.get(name)!));
    at += raw.length;
  }
  return out;
}

/** Bytes per value of a dtype serializeSafetensors writes. */
export function bytesPerValueOf(dtype: SafetensorsWriteDtype): number {
  return dtype === 'F32' ? 4 : 2;
}

/**
 * True when every value is a bfloat16 already (the low 16 bits of each float32 are zero), so that writing it as BF16
 * changes no bit of what is read back: weights loaded from a bf16 checkpoint and never trained since.
 */
export function isExactBf16(data: Float32Array): boolean {
  const bits = new Uint32Array(data.buffer, data.byteOffset, data.length);
  for (let i = 0; i < bits.length; i++) if ((bits[i] & 0xffff) !== 0) return false;
  return true;
}

/**
 * The bfloat16 bit pattern nearest to a float32 given by its bits: round to nearest, ties to even, so 1 + 2^-8
 * (exactly between two bfloat16 values) rounds down to 1 and 1 + 3·2^-8 rounds up. Overflow rounds to infinity, as in
 * torch. A NaN stays a NaN (its top mantissa bit is set so that dropping the low half cannot turn it into infinity).
 */
export function floatToBf16Bits(bits: number): number {
  const b = bits >>> 0;
  if ((b & 0x7f800000) === 0x7f800000 && (b & 0x007fffff) !== 0) return ((b >>> 16) | 0x0040) & 0xffff;
  return ((b + 0x7fff + ((b >>> 16) & 1)) >>> 16) & 0xffff;
}

/**
 * The header of a safetensors file whose tensors (sorted by name, laid out in that order, as serializeSafetensors
 * does) are streamed after it by the caller: the 8-byte length, the JSON and its padding, and where each tensor's
 * bytes go (relative to the end of the header). For files too large to build in memory (ragen init-model's
 * Qwen2.5-3B shards).
 */
export function safetensorsHeader(
  shapes: Record<string, readonly number[]>,
  dtype: SafetensorsWriteDtype,
  metadata?: Record<string, string>,
): { bytes: Uint8Array; order: string[]; dataBytes: number } {
  const bytesPerValue = bytesPerValueOf(dtype);
  const order = Object.keys(shapes).sort();
  const header: Record<string, unknown> = {};
  if (metadata && Object.keys(metadata).length > 0) header.__metadata__ = metadata;
  let offset = 0;
  for (const name of order) {
    if (name === '__metadata__') throw new Error("safetensors: '__metadata__' is reserved and cannot name a tensor");
    const shape = shapes[name];
    checkShape(name, shape);
    const byteLength = shape.reduce((a, b) => a * b, 1) * bytesPerValue;
    header[name] = { dtype, shape: [...shape], data_offsets: [offset, offset + byteLength] };
    offset += byteLength;
  }
  const json = new TextEncoder().encode(JSON.stringify(header));
  const padded = Math.ceil(json.length / 8) * 8;
  const bytes = new Uint8Array(8 + padded);
  new DataView(bytes.buffer).setBigUint64(0, BigInt(padded), true);
  bytes.set(json, 8);
  bytes.fill(0x20, 8 + json.length);
  return { bytes, order, dataBytes: offset };
}

/** Little-endian bfloat16 bytes of `data` (each value rounded to the nearest bfloat16, ties to even). */
export function bf16LittleEndianBytes(data: Float32Array): Uint8Array {
  const out = bf16Bytes(data);
  if (!HOST_IS_LITTLE_ENDIAN) swapBytes(out, 2);
  return out;
}

/** Host-order bytes of the bfloat16 values of `data` (swapped to little-endian by the caller where needed). */
function bf16Bytes(data: Float32Array): Uint8Array {
  const bits = new Uint32Array(data.buffer, data.byteOffset, data.length);
  const out = new Uint16Array(data.length);
  for (let i = 0; i < data.length; i++) out[i] = floatToBf16Bits(bits[i]);
  return new Uint8Array(out.buffer);
}

function parseHeader(headerBytes: Uint8Array): Record<string, unknown> {
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(headerBytes);
  } catch {
    throw new Error('safetensors: bad header: it is not valid UTF-8 (is this a safetensors file?)');
  }
  let header: unknown;
  try {
    header = JSON.parse(text);
  } catch (err) {
    throw new Error(`safetensors: bad JSON header: ${(err as Error).message}`, { cause: err });
  }
  if (header === null || typeof header !== 'object' || Array.isArray(header)) {
    throw new Error('safetensors: bad header: the JSON header must be an object of tensors');
  }
  return header as Record<string, unknown>;
}

function checkShape(name: string, shape: unknown): asserts shape is number[] {
  if (!Array.isArray(shape) || !shape.every((d) => Number.isSafeInteger(d) && d >= 0)) {
    throw new Error(`safetensors: tensor '${name}' has an invalid shape ${JSON.stringify(shape)}`);
  }
}

function checkEntry(name: string, raw: unknown): { dtype: string; shape: number[]; begin: number; end: number } {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
    throw new Error(`safetensors: bad header: entry '${name}' is not an object`);
  }
  const { dtype, shape, data_offsets: offsets } = raw as { dtype?: unknown; shape?: unknown; data_offsets?: unknown };
  if (typeof dtype !== 'string') throw new Error(`safetensors: bad header: tensor '${name}' has no dtype`);
  const size = DTYPE_BYTES[dtype];
  if (size === undefined) {
    throw new Error(
      `safetensors: tensor '${name}' has unsupported dtype '${dtype}' ` +
        `(supported: ${Object.keys(DTYPE_BYTES).join(', ')})`,
    );
  }
  checkShape(name, shape);
  if (
    !Array.isArray(offsets) ||
    offsets.length !== 2 ||
    !offsets.every((o) => Number.isSafeInteger(o) && o >= 0) ||
    offsets[0] > offsets[1]
  ) {
    throw new Error(`safetensors: bad header: tensor '${name}' has invalid data_offsets ${JSON.stringify(offsets)}`);
  }
  const [begin, end] = offsets as [number, number];
  const count = shape.reduce((a, b) => a * b, 1);
  if (count * size !== end - begin) {
    throw new Error(
      `safetensors: mislabelled tensor '${name}': dtype ${dtype} with shape [${shape}] needs ` +
        `${count * size} bytes but data_offsets [${begin}, ${end}) span ${end - begin}`,
    );
  }
  return { dtype, shape, begin, end };
}

/** Converts one tensor's raw little-endian bytes to float32. */
function decode(dtype: string, raw: Uint8Array): Float32Array {
  const size = DTYPE_BYTES[dtype];
  const n = raw.length / size;
  // Copy into a fresh, aligned buffer: typed-array views need alignment, and the caller may reuse the file's bytes.
  // (new Uint8Array(view) always copies; a Node Buffer's slice() would return a view of the whole pooled buffer.)
  const bytes = new Uint8Array(raw);
  if (!HOST_IS_LITTLE_ENDIAN && size > 1) swapBytes(bytes, size);
  const buf = bytes.buffer;
  switch (dtype) {
    case 'F32':
      return new Float32Array(buf); // byte copy: bit-exact, NaN payloads included
    case 'BF16': {
      // bfloat16 is the top half of a float32: shifting the bits back is exact.
      const src = new Uint16Array(buf);
      const out = new Uint32Array(n);
      for (let i = 0; i < n; i++) out[i] = src[i] << 16;
      return new Float32Array(out.buffer);
    }
    case 'F16': {
      const src = new Uint16Array(buf);
      const table = halfToFloatBits();
      const out = new Uint32Array(n);
      for (let i = 0; i < n; i++) out[i] = table[src[i]];
      return new Float32Array(out.buffer);
    }
    case 'F64':
      return Float32Array.from(new Float64Array(buf));
    case 'I64':
      return Float32Array.from(new BigInt64Array(buf), (v) => Number(v));
    case 'U64':
      return Float32Array.from(new BigUint64Array(buf), (v) => Number(v));
    case 'I32':
      return Float32Array.from(new Int32Array(buf));
    case 'U32':
      return Float32Array.from(new Uint32Array(buf));
    case 'I16':
      return Float32Array.from(new Int16Array(buf));
    case 'U16':
      return Float32Array.from(new Uint16Array(buf));
    case 'I8':
      return Float32Array.from(new Int8Array(buf));
    case 'U8':
      return Float32Array.from(bytes);
    case 'BOOL':
      return Float32Array.from(bytes, (b) => (b ? 1 : 0));
    default:
      throw new Error(`safetensors: unsupported dtype '${dtype}'`);
  }
}

let halfTable: Uint32Array | null = null;

/** float32 bit patterns of all 65536 IEEE half-precision values (built once; 256 KiB). */
function halfToFloatBits(): Uint32Array {
  if (halfTable) return halfTable;
  halfTable = new Uint32Array(65536);
  for (let h = 0; h < 65536; h++) {
    const sign = (h & 0x8000) << 16;
    const exp = (h >> 10) & 0x1f;
    let mant = h & 0x3ff;
    let bits: number;
    if (exp === 0x1f) {
      bits = sign | 0x7f800000 | (mant << 13); // inf, or NaN with its payload kept
    } else if (exp !== 0) {
      bits = sign | ((exp - 15 + 127) << 23) | (mant << 13);
    } else if (mant === 0) {
      bits = sign; // +-0
    } else {
      // Subnormal half: renormalise (every half subnormal is a normal float32).
      let e = -14;
      while ((mant & 0x400) === 0) {
        mant <<= 1;
        e--;
      }
      bits = sign | ((e + 127) << 23) | ((mant & 0x3ff) << 13);
    }
    halfTable[h] = bits >>> 0;
  }
  return halfTable;
}

function swapBytes(bytes: Uint8Array, size: number): void {
  for (let i = 0; i < bytes.length; i += size) bytes.subarray(i, i + size).reverse();
}
