// A streaming tar reader (ustar, pax and GNU long names) that yields one entry at a time and
// never buffers a file's body: the unpacker decides what to do with each entry before any of its
// bytes land on disk. Strict: a bad header checksum or a truncated archive is an error.
import { ImageError } from "@kiln/oci";

export type TarType = "file" | "dir" | "symlink" | "hardlink" | "chardev" | "blockdev" | "fifo" | "other";

interface TarHeader {
  path: string;
  type: TarType;
  typeflag: string;
  mode: number;
  size: number;
  linkname: string;
}

export interface TarItem {
  header: TarHeader;
  /** The entry's bytes; drained automatically if the consumer does not read them. */
  body: AsyncIterable<Buffer>;
}

/** pax/GNU metadata records are small; anything bigger is an attack on memory. */
export const MAX_META_BYTES = 1024 * 1024;

export const TYPES: Record<string, TarType> = {
  "0": "file",
  "\0": "file",
  "7": "file",
  "1": "hardlink",
  "2": "symlink",
  "3": "chardev",
  "4": "blockdev",
  "5": "dir",
  "6": "fifo",
};

class ByteSource {
  private chunks: Buffer[] = [];
  private len = 0;
  private done = false;

  constructor(private readonly it: AsyncIterator<Uint8Array>) {}

  /** True when at least n bytes are buffered; false at end of input. */
  async fill(n: number): Promise<boolean> {
    while (this.len < n && !this.done) {
      const r = await this.it.next();
      if (r.done) this.done = true;
      else if (r.value.length > 0) {
        const b = Buffer.isBuffer(r.value) ? r.value : Buffer.from(r.value);
        this.chunks.push(b);
        this.len += b.length;
      }
    }
    return this.len >= n;
  }

  takeUpTo(n: number): Buffer {
    const first = this.chunks[0]!;
    if (first.length <= n) {
      this.chunks.shift();
      this.len -= first.length;
      return first;
    }
    this.chunks[0] = first.subarray(n);
    this.len -= n;
    return first.subarray(0, n);
  }

  async take(n: number): Promise<Buffer> {
    if (!(await this.fill(n))) throw truncated();
    const parts: Buffer[] = [];
    let left = n;
    while (left > 0) {
      const c = this.takeUpTo(left);
      parts.push(c);
      left -= c.length;
    }
    return parts.length === 1 ? parts[0]! : Buffer.concat(parts);
  }

  /** Up to n (> 0) bytes, at least one; throws at end of input. */
  async next(n: number): Promise<Buffer> {
    if (this.len === 0 && !(await this.fill(1))) throw truncated();
    return this.takeUpTo(n);
  }
}

const truncated = () => new ImageError("IMAGE.BAD_MANIFEST", "layer tar is truncated");

export function cString(buf: Buffer, start: number, len: number): string {
  const field = buf.subarray(start, start + len);
  const nul = field.indexOf(0);
  return field.subarray(0, nul < 0 ? len : nul).toString("utf8");
}

export function numeric(buf: Buffer, start: number, len: number): number {
  const field = buf.subarray(start, start + len);
  if (field[0]! & 0x80) {
    // GNU base-256: big-endian, first byte's high bit is the marker.
    let n = field[0]! & 0x7f;
    for (let i = 1; i < len; i++) n = n * 256 + field[i]!;
    if (!Number.isSafeInteger(n)) throw new ImageError("IMAGE.BAD_MANIFEST", "tar numeric field out of range");
    return n;
  }
  const text = field.toString("ascii").replace(/\0.*$/s, "").trim();
  if (text === "") return 0;
  if (!/^[0-7]+$/.test(text))
    throw new ImageError("IMAGE.BAD_MANIFEST", `bad tar numeric field ${JSON.stringify(text)}`);
  return parseInt(text, 8);
}

export function checksumOk(h: Buffer): boolean {
  let sum = 0;
  for (let i = 0; i < 512; i++) sum += i >= 148 && i < 156 ? 32 : h[i]!;
  return sum === numeric(h, 148, 8);
}

export function parsePax(data: Buffer): Record<string, string> {
  const out: Record<string, string> = {};
  let at = 0;
  while (at < data.length) {
    const sp = data.indexOf(32, at);
    if (sp < 0) break;
    const len = Number(data.subarray(at, sp).toString("ascii"));
    if (!Number.isInteger(len) || len <= 0 || at + len > data.length)
      throw new ImageError("IMAGE.BAD_MANIFEST", "bad pax record");
    const rec = data.subarray(sp + 1, at + len - 1).toString("utf8");
    const eq = rec.indexOf("=");
    if (eq > 0) out[rec.slice(0, eq)] = rec.slice(eq + 1);
    at += len;
  }
  return out;
}

export async function* readTar(input: AsyncIterable<Uint8Array>): AsyncGenerator<TarItem> {
  const src = new ByteSource(input[Symbol.asyncIterator]());
  let pax: Record<string, string> = {};
  let longName: string | null = null;
  let longLink: string | null = null;
  for (;;) {
    if (!(await src.fill(512))) return; // no end-of-archive blocks: tolerated, like GNU tar
    const h = await src.take(512);
    if (h.every((b) => b === 0)) return;
    if (!checksumOk(h)) throw new ImageError("IMAGE.BAD_MANIFEST", "tar header checksum mismatch");
    const typeflag = String.fromCharCode(h[156]!);
    let size = numeric(h, 124, 12);
    const padded = size + ((512 - (size % 512)) % 512);
    if (typeflag === "x" || typeflag === "g" || typeflag === "L" || typeflag === "K") {
      if (size > MAX_META_BYTES) throw new ImageError("IMAGE.BAD_MANIFEST", "tar metadata record too large");
      const data = (await src.take(padded)).subarray(0, size);
      if (typeflag === "x") pax = { ...pax, ...parsePax(data) };
      else if (typeflag === "L") longName = cString(data, 0, data.length);
      else if (typeflag === "K") longLink = cString(data, 0, data.length);
      continue; // "g" (global) carries nothing we use
    }
    const magic = h.subarray(257, 263).toString("ascii");
    // POSIX ustar ("ustar\0") has a name prefix at 345; old GNU ("ustar ") keeps times there instead.
    const prefix = magic === "ustar\0" ? cString(h, 345, 155) : "";
    let path = longName ?? (prefix ? `${prefix}/${cString(h, 0, 100)}` : cString(h, 0, 100));
    let linkname = longLink ?? cString(h, 157, 100);
    if (pax.path !== undefined) path = pax.path;
    if (pax.linkpath !== undefined) linkname = pax.linkpath;
    if (pax.size !== undefined) {
      size = Number(pax.size);
      if (!Number.isSafeInteger(size) || size < 0) throw new ImageError("IMAGE.BAD_MANIFEST", "bad pax size");
    }
    pax = {};
    longName = null;
    longLink = null;
    const type = TYPES[typeflag] ?? "other";
    // Only regular files (and unknown types) carry data; a hardlink or dir claiming a size is skipped over.
    const header: TarHeader = { path, type, typeflag, mode: numeric(h, 100, 8), size, linkname };
    // Remaining bytes are tracked outside the iterator: a consumer that stops early (break, throw)
    // closes its iterator, and what it left must still be skipped to reach the next header.
    let remaining = size;
    const body: AsyncIterable<Buffer> = {
      async *[Symbol.asyncIterator]() {
        while (remaining > 0) {
          const c = await src.next(remaining);
          remaining -= c.length;
          yield c;
        }
      },
    };
    yield { header, body };
    while (remaining > 0) remaining -= (await src.next(remaining)).length;
    const pad = (512 - (size % 512)) % 512;
    if (pad) await src.take(pad);
  }
}
