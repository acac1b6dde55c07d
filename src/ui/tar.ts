// A minimal POSIX ustar writer and reader, so an exported run is ONE file laid out like the CLI's run directory
// (config.json, metrics.jsonl, rollouts.jsonl, checkpoints/step-N/…) that `tar -xf` unpacks anywhere, and the
// playground can import it back. Regular files only; no compression (safetensors do not compress much anyway).
//
// Hand-written on purpose: the npm readers checked (nanotar 0.3: no ustar prefix, so long checkpoint paths lose
// their folder, no checksum check, a size field read with parseInt; tar-stream 3: Node streams and `fs`, not
// browser-safe as is) would need the same hardening. The reader runs on the page's UI thread on a file a user
// picked, so it treats every header field as hostile: sizes must be plain octal, every entry moves the read
// position forward, and any damage is one Error that names the byte offset.

const BLOCK = 512;
const encoder = new TextEncoder();
const decoder = new TextDecoder();

function writeString(header: Uint8Array, offset: number, length: number, text: string): void {
  const bytes = encoder.encode(text);
  if (bytes.length > length) throw new Error(`tar: '${text}' does not fit in a ${length}-byte header field`);
  header.set(bytes, offset);
}

function writeOctal(header: Uint8Array, offset: number, length: number, value: number): void {
  // length-1 octal digits, zero-padded, then NUL.
  const digits = value.toString(8);
  if (digits.length > length - 1) throw new Error(`tar: ${value} does not fit in a ${length}-byte octal field`);
  writeString(header, offset, length, digits.padStart(length - 1, '0') + '\0');
}

/** Splits a path into ustar's prefix (≤155 bytes) and name (≤100 bytes) at a '/'. */
function splitPath(path: string): { prefix: string; name: string } {
  if (encoder.encode(path).length <= 100) return { prefix: '', name: path };
  for (let i = path.lastIndexOf('/'); i > 0; i = path.lastIndexOf('/', i - 1)) {
    const prefix = path.slice(0, i);
    const name = path.slice(i + 1);
    if (encoder.encode(prefix).length <= 155 && encoder.encode(name).length <= 100) return { prefix, name };
  }
  throw new Error(`tar: path too long for ustar: '${path}'`);
}

/** A tar archive holding `files` (path -> bytes) in the given order. */
export function writeTar(
  files: readonly { path: string; bytes: Uint8Array }[],
  mtimeSeconds = Math.floor(Date.now() / 1000),
): Uint8Array {
  const size = files.reduce((sum, f) => sum + BLOCK + Math.ceil(f.bytes.length / BLOCK) * BLOCK, 2 * BLOCK);
  const out = new Uint8Array(size);
  let at = 0;
  for (const file of files) {
    if (!file.path || file.path.startsWith('/') || file.path.split('/').includes('..'))
      throw new Error(`tar: unsafe path '${file.path}'`);
    const header = out.subarray(at, at + BLOCK);
    const { prefix, name } = splitPath(file.path);
    writeString(header, 0, 100, name);
    writeOctal(header, 100, 8, 0o644);
    writeOctal(header, 108, 8, 0);
    writeOctal(header, 116, 8, 0);
    writeOctal(header, 124, 12, file.bytes.length);
    writeOctal(header, 136, 12, mtimeSeconds);
    header.fill(0x20, 148, 156); // checksum counted as spaces
    header[156] = 0x30; // '0': regular file
    writeString(header, 257, 6, 'ustar\0');
    writeString(header, 263, 2, '00');
    writeString(header, 345, 155, prefix);
    const checksum = header.reduce((sum, b) => sum + b, 0);
    writeString(header, 148, 8, checksum.toString(8).padStart(6, '0') + '\0 ');
    out.set(file.bytes, at + BLOCK);
    at += BLOCK + Math.ceil(file.bytes.length / BLOCK) * BLOCK;
  }
  return out; // the trailing two zero blocks are already zero
}

function readString(block: Uint8Array, offset: number, length: number): string {
  const field = block.subarray(offset, offset + length);
  const end = field.indexOf(0);
  return decoder.decode(end === -1 ? field : field.subarray(0, end));
}

/**
 * A numeric header field: octal digits, optionally padded with spaces before and NULs or spaces after (what every
 * tar writes). Anything else (a minus sign, a non-octal digit, GNU's base-256 encoding of huge sizes) is damage.
 */
function readOctal(header: Uint8Array, offset: number, length: number, what: string, at: number): number {
  const text = readString(header, offset, length).replace(/^ +| +$/g, '');
  if (!/^[0-7]+$/.test(text)) {
    throw new Error(
      `tar: bad ${what} field ${JSON.stringify(text)} in the header at byte ${at} (expected octal digits)`,
    );
  }
  return parseInt(text, 8);
}

/** A pax extended header's `path` record (`<length> path=<value>\n`), or undefined. */
function paxPath(data: Uint8Array): string | undefined {
  for (const line of decoder.decode(data).split('\n')) {
    const m = /^\d+ path=(.*)$/s.exec(line);
    if (m) return m[1];
  }
  return undefined;
}

/**
 * The regular files of a tar archive (path -> bytes). Reads ustar and GNU archives (long names from GNU `L` entries
 * and pax `path` records included); directories, links and other entry types are skipped. A damaged header, a
 * field that is not octal, or an entry that runs past the end of the archive is an Error naming its byte offset.
 */
export function readTar(archive: Uint8Array): Map<string, Uint8Array> {
  const files = new Map<string, Uint8Array>();
  let longName: string | undefined;
  let at = 0;
  while (at + BLOCK <= archive.length) {
    const header = archive.subarray(at, at + BLOCK);
    if (header.every((b) => b === 0)) break;
    const stored = readString(header, 148, 8).trim();
    let sum = 0;
    for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 0x20 : header[i];
    if (!/^[0-7]+$/.test(stored) || parseInt(stored, 8) !== sum)
      throw new Error(`tar: bad header checksum at byte ${at} (is this a tar file?)`);
    const size = readOctal(header, 124, 12, 'size', at);
    const type = String.fromCharCode(header[156] || 0x30);
    const prefix = readString(header, 345, 155);
    const name = readString(header, 0, 100);
    const path = longName ?? (prefix ? `${prefix}/${name}` : name);
    const dataEnd = at + BLOCK + size;
    if (dataEnd > archive.length)
      throw new Error(
        `tar: '${path}' is cut off (archive truncated at byte ${archive.length}, the entry at byte ${at} needs ${dataEnd})`,
      );
    const data = archive.subarray(at + BLOCK, dataEnd);
    longName = undefined;
    if (type === 'L') longName = readString(data, 0, data.length);
    else if (type === 'x') longName = paxPath(data);
    else if (type === '0' || type === '7') files.set(path.replace(/^\.\//, ''), data.slice());
    // size >= 0, so every entry moves on by at least one block: a hostile header cannot make this loop stall.
    at += BLOCK + Math.ceil(size / BLOCK) * BLOCK;
  }
  return files;
}
