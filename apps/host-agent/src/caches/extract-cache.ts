// Hostile-input-safe extraction of a cache archive into a fresh, agent-owned staging directory.
// Nothing here trusts the archive: the compressed bytes are hashed as they stream in and must match
// the entry's digest; the first member must be the manifest, and every later member must be the
// next manifest entry exactly (path, type, mode, size, SHA-256 of the bytes written, link target).
// Refused outright, never skipped: absolute names, "..", members outside a declared path, hardlinks,
// devices, fifos, setuid/setgid/sticky bits, symlinks leading out of their cache path, writing
// beneath anything that is not a directory this extraction created, and any byte or entry count
// past the budget (a gzip bomb trips the decompressed-byte ceiling, not the disk). The caller
// removes the staging directory on any error; only a fully verified tree is ever moved into place.
//
// Speed (docs/benchmarks.md, "Build caches"): gunzip runs on libuv's pool; the tar stream is parsed
// by a synchronous push parser inside one Writable and members are written with synchronous calls,
// at most one decompressed chunk (1 MiB) at a time, so the event loop is never held for long while
// the per-file thread-pool round trips of async fs calls (open, write, chmod, close) are avoided.
import { createHash } from "node:crypto";
import { Transform } from "node:stream";
import { pipeline } from "node:stream/promises";
import { createGunzip } from "node:zlib";
import { CacheRejected, type ExtractExpectation, type ExtractStats } from "./extract-types.ts";
import { MemberSink } from "./member-sink.ts";

export { CacheRejected, type ExtractExpectation, type ExtractStats } from "./extract-types.ts";

/** Extracts into stagingDir/<i> for every declared path i. Throws CacheRejected (or an I/O error). */
export async function extractCache(
  source: AsyncIterable<Buffer>,
  stagingDir: string,
  want: ExtractExpectation,
  signal?: AbortSignal,
): Promise<ExtractStats> {
  const archiveHash = createHash("sha256");
  const stats: ExtractStats = { compressedBytes: 0, unpackedBytes: 0, entries: 0 };
  const sink = new MemberSink(stagingDir, want, stats);
  const hashing = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      stats.compressedBytes += chunk.length;
      if (stats.compressedBytes > want.sizeBytes)
        return cb(new CacheRejected(`the archive is longer than its entry's ${want.sizeBytes} bytes`));
      archiveHash.update(chunk);
      cb(null, chunk);
    },
  });
  // Decompressed bytes may exceed the manifest's file bytes only by tar headers, pax records and
  // padding. Until the manifest is read the ceiling is the manifest's own limit; after, it is
  // what the manifest declares plus that overhead: a bomb trips it almost at once.
  const inflation = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      sink.inflated += chunk.length;
      if (sink.inflated > sink.inflatedCeiling)
        cb(new CacheRejected(`the archive inflates past ${sink.inflatedCeiling} bytes (decompression bomb)`));
      else cb(null, chunk);
    },
  });
  try {
    await pipeline(source, hashing, createGunzip({ chunkSize: 1024 * 1024 }), inflation, sink, {
      signal: signal ?? new AbortController().signal,
    });
  } catch (e) {
    sink.closeOpenFile();
    if (signal?.aborted) throw new CacheRejected("the restore was interrupted");
    // A malformed tar or gzip stream is hostile input like any other: a refusal, not a crash.
    if (e instanceof CacheRejected || !(e instanceof Error) || "syscall" in e) throw e;
    throw new CacheRejected(`the archive is malformed: ${e.message}`);
  }
  const digest = archiveHash.digest("hex");
  if (stats.compressedBytes !== want.sizeBytes || digest !== want.sha256) {
    throw new CacheRejected(
      `archive digest mismatch: got ${stats.compressedBytes} bytes sha256 ${digest}, the entry says ${want.sizeBytes} bytes sha256 ${want.sha256}`,
    );
  }
  return stats;
}
