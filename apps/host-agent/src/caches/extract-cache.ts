// Hostile-input-safe extraction of a cache archive into a fresh, agent-owned staging directory.
// Nothing here trusts the archive: the compressed bytes are hashed as they stream in and must match
// the entry's digest; the first member must be the manifest, and every later member must be the
// next manifest entry exactly (path, type, mode, size, SHA-256 of the bytes written, link target).
// Refused outright, never skipped: absolute names, "..", members outside a declared path, hardlinks,
// devices, fifos, setuid/setgid/sticky bits, symlinks leading out of their cache path, writing
// beneath anything that is not a directory this extraction created, and any byte or entry count
// past the budget (a gzip bomb trips the decompressed-byte counter, not the disk). The caller
// removes the staging directory on any error; only a fully verified tree is ever moved into place.
import { createHash } from "node:crypto";
import { constants } from "node:fs";
import { chmod, mkdir, open, symlink } from "node:fs/promises";
import path from "node:path";
import { Transform } from "node:stream";
import { createGunzip, type Gunzip } from "node:zlib";
import {
  cacheManifest,
  cacheModeProblem,
  cacheSymlinkProblem,
  MANIFEST_NAME,
  MAX_MANIFEST_BYTES,
  parseCacheMemberName,
  type CacheManifest,
} from "@kiln/domain";
import { readTar, type TarItem } from "../images/tar-reader.ts";

export class CacheRejected extends Error {
  constructor(message: string) {
    super(message);
    this.name = "CacheRejected";
  }
}

export interface ExtractExpectation {
  /** The declared cache paths of the job, in order; the manifest must list exactly these. */
  paths: readonly string[];
  sizeBytes: number;
  sha256: string;
  maxBytes: number;
  maxEntries: number;
}

export interface ExtractStats {
  compressedBytes: number;
  unpackedBytes: number;
  entries: number;
}

/** Extracts into stagingDir/<i> for every declared path i. Throws CacheRejected (or an I/O error). */
export async function extractCache(source: AsyncIterable<Buffer>, stagingDir: string, want: ExtractExpectation, signal?: AbortSignal): Promise<ExtractStats> {
  const archiveHash = createHash("sha256");
  const stats: ExtractStats = { compressedBytes: 0, unpackedBytes: 0, entries: 0 };
  // Decompressed bytes may exceed the manifest's file bytes only by tar headers, pax records and
  // padding. Until the manifest is read the ceiling is the manifest's own limit; after, it is
  // what the manifest declares plus that overhead: a bomb trips it almost at once.
  let inflatedCeiling = MAX_MANIFEST_BYTES + 1024 * 1024;
  const onManifest = (m: CacheManifest, manifestBytes: number) => {
    let files = 0;
    for (const e of m.entries) if (e.type === "file") files += e.size;
    inflatedCeiling = manifestBytes + files + (m.entries.length + 2) * 10 * 1024 + 1024 * 1024;
  };
  let inflated = 0;
  const gunzip = createGunzip({ chunkSize: 1024 * 1024 });
  const counted = gunzip.pipe(
    new Transform({
      transform(chunk: Buffer, _enc, cb) {
        inflated += chunk.length;
        if (inflated > inflatedCeiling) cb(new CacheRejected(`the archive inflates past ${inflatedCeiling} bytes (decompression bomb)`));
        else cb(null, chunk);
      },
    }),
  );
  gunzip.on("error", (e) => counted.destroy(e));
  const feeding = (async () => {
    for await (const chunk of source) {
      if (signal?.aborted) throw new CacheRejected("the restore was interrupted");
      stats.compressedBytes += chunk.length;
      if (stats.compressedBytes > want.sizeBytes) throw new CacheRejected(`the archive is longer than its entry's ${want.sizeBytes} bytes`);
      archiveHash.update(chunk);
      if (!gunzip.write(chunk)) await drained(gunzip);
    }
    gunzip.end();
  })();
  feeding.catch((e: unknown) => counted.destroy(e instanceof Error ? e : new Error(String(e))));
  // One iterator for the whole stream, never closed by the tar reader, so whatever follows the
  // end-of-archive blocks is still read (and hashed, and counted) below.
  const it = (counted as AsyncIterable<Buffer>)[Symbol.asyncIterator]();
  const inflatedStream: AsyncIterable<Buffer> = { [Symbol.asyncIterator]: () => ({ next: () => it.next() }) };
  try {
    await applyMembers(readTar(inflatedStream), stagingDir, want, stats, onManifest, signal);
    for (;;) if ((await it.next()).done) break;
    await feeding;
  } catch (e) {
    gunzip.destroy();
    counted.destroy();
    // A malformed tar or gzip stream is hostile input like any other: a refusal, not a crash.
    if (e instanceof CacheRejected || !(e instanceof Error) || "syscall" in e) throw e;
    throw new CacheRejected(`the archive is malformed: ${e.message}`);
  }
  const digest = archiveHash.digest("hex");
  if (stats.compressedBytes !== want.sizeBytes || digest !== want.sha256) {
    throw new CacheRejected(`archive digest mismatch: got ${stats.compressedBytes} bytes sha256 ${digest}, the entry says ${want.sizeBytes} bytes sha256 ${want.sha256}`);
  }
  return stats;
}

async function applyMembers(
  items: AsyncIterable<TarItem>,
  stagingDir: string,
  want: ExtractExpectation,
  stats: ExtractStats,
  onManifest: (m: CacheManifest, bytes: number) => void,
  signal?: AbortSignal,
): Promise<void> {
  let manifest: CacheManifest | null = null;
  let next = 0;
  // Only directories this extraction made may hold members: never a link, never a file.
  const dirs = new Set<string>();
  const dirModes: [string, number][] = [];
  for await (const { header, body } of items) {
    if (signal?.aborted) throw new CacheRejected("the restore was interrupted");
    const name = header.path.endsWith("/") ? header.path.slice(0, -1) : header.path;
    if (!manifest) {
      if (name !== MANIFEST_NAME || header.type !== "file") throw new CacheRejected("the archive does not start with its manifest");
      if (header.size > MAX_MANIFEST_BYTES) throw new CacheRejected("the manifest is too large");
      manifest = parseManifest(await readAll(body, header.size), want);
      onManifest(manifest, header.size);
      continue;
    }
    const expected = manifest.entries[next++];
    if (!expected) throw new CacheRejected(`member ${JSON.stringify(name.slice(0, 200))} is not in the manifest`);
    if (++stats.entries > want.maxEntries) throw new CacheRejected(`the archive has more than ${want.maxEntries} entries`);
    if (expected.path !== name) throw new CacheRejected(`member ${JSON.stringify(name.slice(0, 200))} is out of manifest order`);
    const parsed = parseCacheMemberName(name, want.paths.length);
    if ("problem" in parsed) throw new CacheRejected(`member ${JSON.stringify(name.slice(0, 200))} ${parsed.problem}`);
    const parent = parsed.rel.length === 0 ? stagingDir : path.join(stagingDir, String(parsed.index), ...parsed.rel.slice(0, -1));
    if (parent !== stagingDir && !dirs.has(parent)) throw new CacheRejected(`member ${JSON.stringify(name.slice(0, 200))} is not inside a directory of the archive`);
    const abs = path.join(stagingDir, String(parsed.index), ...parsed.rel);
    if (header.type !== expected.type) throw new CacheRejected(`member ${JSON.stringify(name.slice(0, 200))} is a ${header.type}, the manifest says ${expected.type}`);
    switch (expected.type) {
      case "dir": {
        const bad = cacheModeProblem(header.mode);
        if (bad || header.mode !== expected.mode) throw new CacheRejected(`directory ${JSON.stringify(name)} ${bad ?? "has another mode than its manifest entry"}`);
        if (dirs.has(abs)) throw new CacheRejected(`directory ${JSON.stringify(name)} appears twice`);
        await mkdir(abs, { mode: 0o700 });
        dirs.add(abs);
        dirModes.push([abs, expected.mode]);
        break;
      }
      case "symlink": {
        const bad = cacheSymlinkProblem(parsed.rel, header.linkname);
        if (bad) throw new CacheRejected(`symlink ${JSON.stringify(name)} ${bad}`);
        if (header.linkname !== expected.target) throw new CacheRejected(`symlink ${JSON.stringify(name)} has another target than its manifest entry`);
        await symlink(header.linkname, abs);
        break;
      }
      case "file": {
        const bad = cacheModeProblem(header.mode);
        if (bad || header.mode !== expected.mode) throw new CacheRejected(`file ${JSON.stringify(name)} ${bad ?? "has another mode than its manifest entry"}`);
        if (header.size !== expected.size) throw new CacheRejected(`file ${JSON.stringify(name)} has another size than its manifest entry`);
        if (stats.unpackedBytes + header.size > want.maxBytes) throw new CacheRejected(`the archive unpacks to more than ${want.maxBytes} bytes`);
        await writeVerified(abs, header.size, expected.mode, expected.sha256, body, name);
        stats.unpackedBytes += header.size;
        break;
      }
    }
  }
  if (!manifest) throw new CacheRejected("the archive is empty");
  if (next !== manifest.entries.length) throw new CacheRejected(`the archive ends after ${next} of ${manifest.entries.length} manifest entries`);
  for (const [dir, mode] of dirModes.reverse()) await chmod(dir, mode | 0o700);
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
  if (m.data.entries.length > want.maxEntries) throw new CacheRejected(`the manifest lists more than ${want.maxEntries} entries`);
  let total = 0;
  for (const e of m.data.entries) if (e.type === "file") total += e.size;
  if (total > want.maxBytes) throw new CacheRejected(`the manifest declares more than ${want.maxBytes} bytes`);
  // Every declared path is a directory the archive creates itself (what pack-cache writes).
  const roots = new Set(m.data.entries.filter((e) => e.type === "dir" && /^[0-9]+$/.test(e.path)).map((e) => e.path));
  for (let i = 0; i < want.paths.length; i++) if (!roots.has(String(i))) throw new CacheRejected(`the manifest has no directory for cache path ${i}`);
  return m.data;
}

function drained(stream: Gunzip): Promise<void> {
  return new Promise((resolve, reject) => {
    const done = () => {
      stream.off("drain", done);
      stream.off("error", fail);
      stream.off("close", closed);
      resolve();
    };
    const fail = (e: unknown) => {
      stream.off("drain", done);
      stream.off("close", closed);
      reject(e instanceof Error ? e : new Error(String(e)));
    };
    const closed = () => fail(new CacheRejected("the decompressor closed early"));
    stream.once("drain", done);
    stream.once("error", fail);
    stream.once("close", closed);
  });
}

async function readAll(body: AsyncIterable<Buffer>, size: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of body) chunks.push(c);
  const b = Buffer.concat(chunks);
  if (b.length !== size) throw new CacheRejected("a member is shorter than its header says");
  return b;
}

async function writeVerified(abs: string, size: number, mode: number, sha256: string, body: AsyncIterable<Buffer>, name: string): Promise<void> {
  // O_EXCL|O_NOFOLLOW: never through a link, never over something already extracted.
  const fh = await open(abs, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  const h = createHash("sha256");
  let written = 0;
  try {
    for await (const chunk of body) {
      h.update(chunk);
      await fh.write(chunk);
      written += chunk.length;
    }
    await fh.chmod(mode);
  } finally {
    await fh.close();
  }
  if (written !== size) throw new CacheRejected(`file ${JSON.stringify(name)} is shorter than its header says`);
  if (h.digest("hex") !== sha256) throw new CacheRejected(`file ${JSON.stringify(name)} does not match its manifest sha256`);
}
