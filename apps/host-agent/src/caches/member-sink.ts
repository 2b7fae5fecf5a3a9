// The tar side of cache extraction (see extract-cache.ts for the rules): a synchronous push parser
// over the inflated stream that applies each member as it arrives, checked against the manifest.
import { createHash, type Hash } from "node:crypto";
import { chmodSync, closeSync, constants, fchmodSync, mkdirSync, openSync, symlinkSync, writeSync } from "node:fs";
import path from "node:path";
import { Writable } from "node:stream";
import {
  cacheManifest,
  cacheModeProblem,
  cacheSymlinkProblem,
  MANIFEST_NAME,
  MAX_MANIFEST_BYTES,
  parseCacheMemberName,
  type CacheManifest,
  type CacheManifestEntry,
} from "@kiln/domain";
import { checksumOk, cString, MAX_META_BYTES, numeric, parsePax, TYPES, type TarType } from "../shared/tar-reader.ts";
import { CacheRejected, type ExtractExpectation, type ExtractStats } from "./extract-types.ts";

interface Header {
  name: string;
  type: TarType;
  mode: number;
  size: number;
  linkname: string;
}

type State =
  | { kind: "header" }
  | { kind: "meta"; typeflag: string; left: number; pad: number; parts: Buffer[] }
  | { kind: "body"; left: number; pad: number; file: OpenFile | null; manifest: Buffer[] | null }
  | { kind: "pad"; left: number }
  | { kind: "end" };

interface OpenFile {
  fd: number;
  hash: Hash;
  name: string;
  size: number;
  mode: number;
  sha256: string;
  written: number;
}

/** Parses the inflated tar stream and applies each member as it arrives (synchronously). */
export class MemberSink extends Writable {
  inflated = 0;
  inflatedCeiling = MAX_MANIFEST_BYTES + 1024 * 1024;
  private state: State = { kind: "header" };
  private readonly head = Buffer.alloc(512);
  private headFill = 0;
  private pax: Record<string, string> = {};
  private longName: string | null = null;
  private longLink: string | null = null;
  private manifest: CacheManifest | null = null;
  private next = 0;
  private file: OpenFile | null = null;
  // Only directories this extraction made may hold members: never a link, never a file.
  private readonly dirs = new Set<string>();
  private readonly dirModes: [string, number][] = [];

  constructor(
    private readonly stagingDir: string,
    private readonly want: ExtractExpectation,
    private readonly stats: ExtractStats,
  ) {
    super({ highWaterMark: 1024 * 1024 });
  }

  override _write(chunk: Buffer, _enc: BufferEncoding, cb: (e?: Error | null) => void): void {
    try {
      this.push_(chunk);
      cb();
    } catch (e) {
      cb(e instanceof Error ? e : new Error(String(e)));
    }
  }

  override _final(cb: (e?: Error | null) => void): void {
    try {
      // No end-of-archive blocks is tolerated (like GNU tar) only between members.
      if (this.state.kind !== "end" && !(this.state.kind === "header" && this.headFill === 0))
        throw new CacheRejected("the archive is truncated");
      if (!this.manifest) throw new CacheRejected("the archive is empty");
      if (this.next !== this.manifest.entries.length)
        throw new CacheRejected(
          `the archive ends after ${this.next} of ${this.manifest.entries.length} manifest entries`,
        );
      for (const [dir, mode] of this.dirModes.reverse()) chmodSync(dir, mode | 0o700);
      cb();
    } catch (e) {
      cb(e instanceof Error ? e : new Error(String(e)));
    }
  }

  override _destroy(err: Error | null, cb: (e?: Error | null) => void): void {
    this.closeOpenFile();
    cb(err);
  }

  closeOpenFile(): void {
    if (this.file) {
      try {
        closeSync(this.file.fd);
      } catch {
        // already closed; the staging directory is removed by the caller anyway
      }
      this.file = null;
    }
  }

  private push_(chunk: Buffer): void {
    let at = 0;
    while (at < chunk.length) {
      const s = this.state;
      const avail = chunk.length - at;
      switch (s.kind) {
        case "end":
          return; // trailing zeros after the end blocks: counted by the inflation ceiling only
        case "header": {
          const n = Math.min(512 - this.headFill, avail);
          chunk.copy(this.head, this.headFill, at, at + n);
          this.headFill += n;
          at += n;
          if (this.headFill === 512) {
            this.headFill = 0;
            this.onHeader();
          }
          break;
        }
        case "meta": {
          const n = Math.min(s.left, avail);
          s.parts.push(Buffer.from(chunk.subarray(at, at + n)));
          s.left -= n;
          at += n;
          if (s.left === 0) this.onMeta(s.typeflag, Buffer.concat(s.parts), s.pad);
          break;
        }
        case "body": {
          const n = Math.min(s.left, avail);
          const part = chunk.subarray(at, at + n);
          if (s.file) this.writeFilePart(s.file, part);
          else if (s.manifest) s.manifest.push(Buffer.from(part));
          s.left -= n;
          at += n;
          if (s.left === 0) {
            if (s.file) this.finishFile(s.file);
            if (s.manifest) this.onManifest(Buffer.concat(s.manifest));
            this.state = s.pad > 0 ? { kind: "pad", left: s.pad } : { kind: "header" };
          }
          break;
        }
        case "pad": {
          const n = Math.min(s.left, avail);
          s.left -= n;
          at += n;
          if (s.left === 0) this.state = { kind: "header" };
          break;
        }
      }
    }
  }

  private onHeader(): void {
    const h = this.head;
    if (h.every((b) => b === 0)) {
      this.state = { kind: "end" };
      return;
    }
    if (!checksumOk(h)) throw new CacheRejected("the archive is malformed: tar header checksum mismatch");
    const typeflag = String.fromCharCode(h[156]!);
    let size = numeric(h, 124, 12);
    const pad = (n: number) => (512 - (n % 512)) % 512;
    if (typeflag === "x" || typeflag === "g" || typeflag === "L" || typeflag === "K") {
      if (size > MAX_META_BYTES) throw new CacheRejected("the archive is malformed: tar metadata record too large");
      this.state = size === 0 ? { kind: "header" } : { kind: "meta", typeflag, left: size, pad: pad(size), parts: [] };
      return;
    }
    const magic = h.subarray(257, 263).toString("ascii");
    const prefix = magic === "ustar\0" ? cString(h, 345, 155) : "";
    let name = this.longName ?? (prefix ? `${prefix}/${cString(h, 0, 100)}` : cString(h, 0, 100));
    let linkname = this.longLink ?? cString(h, 157, 100);
    if (this.pax.path !== undefined) name = this.pax.path;
    if (this.pax.linkpath !== undefined) linkname = this.pax.linkpath;
    if (this.pax.size !== undefined) {
      size = Number(this.pax.size);
      if (!Number.isSafeInteger(size) || size < 0) throw new CacheRejected("the archive is malformed: bad pax size");
    }
    this.pax = {};
    this.longName = null;
    this.longLink = null;
    const header: Header = {
      name: name.endsWith("/") ? name.slice(0, -1) : name,
      type: TYPES[typeflag] ?? "other",
      mode: numeric(h, 100, 8),
      size,
      linkname,
    };
    const consumer = this.onMember(header);
    // Only files carry data. A directory or link claiming a size is followed by bytes that then
    // fail as the next header: a refusal either way.
    const bodySize = header.type === "file" ? size : 0;
    this.state =
      bodySize === 0
        ? { kind: "header" }
        : { kind: "body", left: bodySize, pad: pad(bodySize), file: consumer.file, manifest: consumer.manifest };
    if (bodySize === 0 && consumer.file) this.finishFile(consumer.file);
    if (bodySize === 0 && consumer.manifest) this.onManifest(Buffer.alloc(0));
  }

  private onMeta(typeflag: string, data: Buffer, pad: number): void {
    if (typeflag === "x") this.pax = { ...this.pax, ...parsePax(data) };
    else if (typeflag === "L") this.longName = cString(data, 0, data.length);
    else if (typeflag === "K") this.longLink = cString(data, 0, data.length);
    this.state = pad > 0 ? { kind: "pad", left: pad } : { kind: "header" };
  }

  private onMember(h: Header): { file: OpenFile | null; manifest: Buffer[] | null } {
    const { name } = h;
    const quoted = JSON.stringify(name.slice(0, 200));
    if (!this.manifest) {
      if (this.next > 0 || name !== MANIFEST_NAME || h.type !== "file")
        throw new CacheRejected("the archive does not start with its manifest");
      if (h.size > MAX_MANIFEST_BYTES) throw new CacheRejected("the manifest is too large");
      this.next = -1; // the manifest is being read
      return { file: null, manifest: [] };
    }
    const expected: CacheManifestEntry | undefined = this.manifest.entries[this.next++];
    if (!expected) throw new CacheRejected(`member ${quoted} is not in the manifest`);
    if (++this.stats.entries > this.want.maxEntries)
      throw new CacheRejected(`the archive has more than ${this.want.maxEntries} entries`);
    if (expected.path !== name) throw new CacheRejected(`member ${quoted} is out of manifest order`);
    const parsed = parseCacheMemberName(name, this.want.paths.length);
    if ("problem" in parsed) throw new CacheRejected(`member ${quoted} ${parsed.problem}`);
    if (h.type !== expected.type)
      throw new CacheRejected(`member ${quoted} is a ${h.type}, the manifest says ${expected.type}`);
    const parent =
      parsed.rel.length === 0
        ? this.stagingDir
        : path.join(this.stagingDir, String(parsed.index), ...parsed.rel.slice(0, -1));
    if (parent !== this.stagingDir && !this.dirs.has(parent))
      throw new CacheRejected(`member ${quoted} is not inside a directory of the archive`);
    const abs = path.join(this.stagingDir, String(parsed.index), ...parsed.rel);
    switch (expected.type) {
      case "dir": {
        const bad = cacheModeProblem(h.mode);
        if (bad || h.mode !== expected.mode)
          throw new CacheRejected(`directory ${quoted} ${bad ?? "has another mode than its manifest entry"}`);
        if (this.dirs.has(abs)) throw new CacheRejected(`directory ${quoted} appears twice`);
        mkdirSync(abs, { mode: 0o700 });
        this.dirs.add(abs);
        this.dirModes.push([abs, expected.mode]);
        return { file: null, manifest: null };
      }
      case "symlink": {
        const bad = cacheSymlinkProblem(parsed.rel, h.linkname);
        if (bad) throw new CacheRejected(`symlink ${quoted} ${bad}`);
        if (h.linkname !== expected.target)
          throw new CacheRejected(`symlink ${quoted} has another target than its manifest entry`);
        symlinkSync(h.linkname, abs);
        return { file: null, manifest: null };
      }
      case "file": {
        const bad = cacheModeProblem(h.mode);
        if (bad || h.mode !== expected.mode)
          throw new CacheRejected(`file ${quoted} ${bad ?? "has another mode than its manifest entry"}`);
        if (h.size !== expected.size)
          throw new CacheRejected(`file ${quoted} has another size than its manifest entry`);
        if (this.stats.unpackedBytes + h.size > this.want.maxBytes)
          throw new CacheRejected(`the archive unpacks to more than ${this.want.maxBytes} bytes`);
        // O_EXCL|O_NOFOLLOW: never through a link, never over something already extracted.
        const fd = openSync(
          abs,
          constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
          0o600,
        );
        this.file = {
          fd,
          hash: createHash("sha256"),
          name,
          size: h.size,
          mode: expected.mode,
          sha256: expected.sha256,
          written: 0,
        };
        return { file: this.file, manifest: null };
      }
    }
  }

  private writeFilePart(f: OpenFile, part: Buffer): void {
    f.hash.update(part);
    let off = 0;
    while (off < part.length) off += writeSync(f.fd, part, off, part.length - off);
    f.written += part.length;
  }

  private finishFile(f: OpenFile): void {
    fchmodSync(f.fd, f.mode);
    closeSync(f.fd);
    this.file = null;
    if (f.written !== f.size) throw new CacheRejected(`file ${JSON.stringify(f.name)} is shorter than its header says`);
    if (f.hash.digest("hex") !== f.sha256)
      throw new CacheRejected(`file ${JSON.stringify(f.name)} does not match its manifest sha256`);
    this.stats.unpackedBytes += f.size;
  }

  private onManifest(bytes: Buffer): void {
    const m = parseManifest(bytes, this.want);
    this.manifest = m;
    this.next = 0;
    let files = 0;
    for (const e of m.entries) if (e.type === "file") files += e.size;
    this.inflatedCeiling = bytes.length + files + (m.entries.length + 2) * 10 * 1024 + 1024 * 1024;
  }
}

function parseManifest(bytes: Buffer, want: ExtractExpectation): CacheManifest {
  let raw: unknown;
  try {
    raw = JSON.parse(bytes.toString("utf8"));
  } catch {
    throw new CacheRejected("the manifest is not JSON");
  }
  const m = cacheManifest.safeParse(raw);
  if (!m.success) throw new CacheRejected("the manifest does not match format 1");
  if (m.data.paths.length !== want.paths.length || m.data.paths.some((p, i) => p !== want.paths[i])) {
    throw new CacheRejected("the manifest lists other cache paths than the job declares");
  }
  if (m.data.entries.length > want.maxEntries)
    throw new CacheRejected(`the manifest lists more than ${want.maxEntries} entries`);
  let total = 0;
  for (const e of m.data.entries) if (e.type === "file") total += e.size;
  if (total > want.maxBytes) throw new CacheRejected(`the manifest declares more than ${want.maxBytes} bytes`);
  // Every declared path is a directory the archive creates itself (what pack-cache writes).
  const roots = new Set(m.data.entries.filter((e) => e.type === "dir" && /^[0-9]+$/.test(e.path)).map((e) => e.path));
  for (let i = 0; i < want.paths.length; i++)
    if (!roots.has(String(i))) throw new CacheRejected(`the manifest has no directory for cache path ${i}`);
  return m.data;
}
