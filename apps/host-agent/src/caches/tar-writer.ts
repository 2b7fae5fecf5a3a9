// A minimal POSIX tar writer for cache archives: exactly the members the manifest lists, in its
// order, with no owner, no times and no special bits, so the same tree always packs to the same
// bytes. Names or link targets beyond ustar's fields go in a pax record ("x").
import type { Writable } from "node:stream";

const BLOCK = 512;

function octal(value: number, width: number): string {
  return value.toString(8).padStart(width - 1, "0") + "\0";
}

/** One raw ustar header block (exported for tests that craft hostile archives). */
export function header(name: string, typeflag: string, mode: number, size: number, linkname: string): Buffer {
  const h = Buffer.alloc(BLOCK);
  h.write(name, 0, 100, "utf8");
  h.write(octal(mode, 8), 100, "ascii");
  h.write(octal(0, 8), 108, "ascii");
  h.write(octal(0, 8), 116, "ascii");
  h.write(octal(size, 12), 124, "ascii");
  h.write(octal(0, 12), 136, "ascii");
  h.write("        ", 148, "ascii");
  h.write(typeflag, 156, "ascii");
  h.write(linkname, 157, 100, "utf8");
  h.write("ustar\u000000", 257, "binary");
  let sum = 0;
  for (const b of h) sum += b;
  h.write(octal(sum, 7) + " ", 148, "ascii");
  return h;
}

function paxRecord(key: string, value: string): string {
  const body = ` ${key}=${value}\n`;
  let len = Buffer.byteLength(body) + 1;
  while (String(len).length + Buffer.byteLength(body) !== len) len = String(len).length + Buffer.byteLength(body);
  return `${len}${body}`;
}

const fits = (s: string) => Buffer.byteLength(s) < 100;
const MAX_USTAR_SIZE = 8 ** 11 - 1;

export class TarWriter {
  constructor(private readonly out: Writable) {}

  private write(b: Buffer): Promise<void> {
    return new Promise((resolve, reject) => {
      this.out.write(b, (err) => (err ? reject(err) : resolve()));
    });
  }

  private async head(name: string, typeflag: string, mode: number, size: number, linkname = ""): Promise<void> {
    const records: string[] = [];
    if (!fits(name)) records.push(paxRecord("path", name));
    if (!fits(linkname)) records.push(paxRecord("linkpath", linkname));
    if (size > MAX_USTAR_SIZE) records.push(paxRecord("size", String(size)));
    if (records.length > 0) {
      const data = Buffer.from(records.join(""), "utf8");
      await this.write(header("PaxHeader", "x", 0o644, data.length, ""));
      await this.write(padded(data));
    }
    await this.write(
      header(
        fits(name) ? name : name.slice(0, 99),
        typeflag,
        mode,
        size > MAX_USTAR_SIZE ? 0 : size,
        fits(linkname) ? linkname : "",
      ),
    );
  }

  async dir(name: string, mode: number): Promise<void> {
    await this.head(`${name}/`, "5", mode, 0);
  }

  async symlink(name: string, target: string): Promise<void> {
    await this.head(name, "2", 0o777, 0, target);
  }

  /** Streams `body` (exactly `size` bytes, or the archive is refused on restore) as a regular file. */
  async file(name: string, mode: number, size: number, body: AsyncIterable<Buffer>): Promise<void> {
    await this.head(name, "0", mode, size);
    let n = 0;
    for await (const chunk of body) {
      n += chunk.length;
      if (n > size) throw new Error(`${name} grew while it was packed`);
      await this.write(chunk);
    }
    if (n !== size) throw new Error(`${name} shrank while it was packed`);
    const pad = (BLOCK - (size % BLOCK)) % BLOCK;
    if (pad) await this.write(Buffer.alloc(pad));
  }

  async end(): Promise<void> {
    await this.write(Buffer.alloc(BLOCK * 2));
  }
}

function padded(data: Buffer): Buffer {
  const pad = (BLOCK - (data.length % BLOCK)) % BLOCK;
  return pad ? Buffer.concat([data, Buffer.alloc(pad)]) : data;
}
