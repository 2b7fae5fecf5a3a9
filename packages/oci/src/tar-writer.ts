// A minimal ustar writer. It builds the base image's layer deterministically (fixed mtime and
// owners, so the same files always give the same digest) and lets tests craft hostile layers
// (`../` names, absolute links, device nodes) that no well-behaved archiver would produce.
export type TarEntryType = "file" | "dir" | "symlink" | "hardlink" | "chardev" | "blockdev" | "fifo";

export interface TarEntry {
  path: string;
  type: TarEntryType;
  mode?: number;
  data?: Uint8Array | string;
  linkname?: string;
  uid?: number;
  gid?: number;
}

const TYPEFLAG: Record<TarEntryType, string> = {
  file: "0",
  hardlink: "1",
  symlink: "2",
  chardev: "3",
  blockdev: "4",
  dir: "5",
  fifo: "6",
};

function octal(n: number, width: number): string {
  return `${n.toString(8).padStart(width - 1, "0")}\0`;
}

function header(name: string, e: TarEntry, size: number): Buffer {
  const h = Buffer.alloc(512, 0);
  let prefix = "";
  let base = name;
  if (Buffer.byteLength(name) > 100) {
    const cut = name.lastIndexOf("/", 155);
    if (cut <= 0 || Buffer.byteLength(name.slice(cut + 1)) > 100) throw new Error(`tar path too long: ${name}`);
    prefix = name.slice(0, cut);
    base = name.slice(cut + 1);
  }
  h.write(base, 0, 100, "utf8");
  h.write(octal(e.mode ?? (e.type === "dir" ? 0o755 : 0o644), 8), 100, "ascii");
  h.write(octal(e.uid ?? 0, 8), 108, "ascii");
  h.write(octal(e.gid ?? 0, 8), 116, "ascii");
  h.write(octal(size, 12), 124, "ascii");
  h.write(octal(0, 12), 136, "ascii"); // mtime 0: deterministic digests
  h.write("        ", 148, "ascii"); // checksum placeholder
  h.write(TYPEFLAG[e.type], 156, "ascii");
  if (e.linkname) h.write(e.linkname, 157, 100, "utf8");
  h.write("ustar\0" + "00", 257, "ascii");
  h.write(octal(0, 8), 329, "ascii");
  h.write(octal(0, 8), 337, "ascii");
  if (prefix) h.write(prefix, 345, 155, "utf8");
  let sum = 0;
  for (const b of h) sum += b;
  h.write(`${sum.toString(8).padStart(6, "0")}\0 `, 148, "ascii");
  return h;
}

/** The whole archive in memory (layers written this way are small: tests and the base image). */
export function writeTar(entries: TarEntry[]): Buffer {
  const parts: Buffer[] = [];
  for (const e of entries) {
    const data = e.type === "file" ? Buffer.from(e.data ?? "") : Buffer.alloc(0);
    const name = e.type === "dir" && !e.path.endsWith("/") ? `${e.path}/` : e.path;
    parts.push(header(name, e, data.length), data);
    const pad = (512 - (data.length % 512)) % 512;
    if (pad) parts.push(Buffer.alloc(pad));
  }
  parts.push(Buffer.alloc(1024));
  return Buffer.concat(parts);
}
