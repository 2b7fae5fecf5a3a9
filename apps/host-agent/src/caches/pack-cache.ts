// Packs the declared cache paths of a finished job into one archive (format 1, see
// packages/domain/src/caches/cache-manifest.ts): walk without following anything, hash every file
// into the manifest, then write manifest + members through gzip into the spool, hashing the
// compressed bytes as they are written. Anything the restore side would refuse (a link leading out
// of its cache path, a device, a fifo, a tree past the budget) skips the save with a reason instead.
import { createHash } from "node:crypto";
import { createReadStream, createWriteStream } from "node:fs";
import { lstat, readdir, readlink, realpath } from "node:fs/promises";
import path from "node:path";
import { Transform } from "node:stream";
import { pipeline } from "node:stream/promises";
import { createGzip } from "node:zlib";
import {
  cachePathProblem,
  cacheSymlinkProblem,
  MANIFEST_NAME,
  type CacheManifest,
  type CacheManifestEntry,
} from "@kiln/domain";
import { TarWriter } from "./tar-writer.ts";

export interface PackBudget {
  maxBytes: number;
  maxEntries: number;
}

export type PackResult =
  | { ok: true; file: string; sizeBytes: number; sha256: string; unpackedBytes: number; entryCount: number }
  | { ok: false; reason: string };

export async function packCache(
  workspaceDir: string,
  paths: readonly string[],
  outFile: string,
  budget: PackBudget,
): Promise<PackResult> {
  const walked = await buildManifest(workspaceDir, paths, budget);
  if (!walked.ok) return walked;
  const { manifest, sources, unpackedBytes } = walked;
  const hash = createHash("sha256");
  let sizeBytes = 0;
  const counter = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      hash.update(chunk);
      sizeBytes += chunk.length;
      cb(null, chunk);
    },
  });
  // Level 1: dependency trees are mostly already-compressed packages; speed matters more than ratio.
  const gzip = createGzip({ level: 1, chunkSize: 1024 * 1024 });
  const written = pipeline(gzip, counter, createWriteStream(outFile, { flags: "wx", mode: 0o600 }));
  const tar = new TarWriter(gzip);
  try {
    const manifestBytes = Buffer.from(JSON.stringify(manifest), "utf8");
    await tar.file(MANIFEST_NAME, 0o600, manifestBytes.length, one(manifestBytes));
    for (const [i, e] of manifest.entries.entries()) {
      if (e.type === "dir") await tar.dir(e.path, e.mode);
      else if (e.type === "symlink") await tar.symlink(e.path, e.target);
      else
        await tar.file(
          e.path,
          e.mode,
          e.size,
          createReadStream(sources[i] ?? "", { highWaterMark: 1024 * 1024 }) as AsyncIterable<Buffer>,
        );
    }
    await tar.end();
    gzip.end();
    await written;
  } catch (err) {
    gzip.destroy(err instanceof Error ? err : new Error(String(err)));
    await written.catch(() => undefined);
    return { ok: false, reason: `could not pack the cache: ${err instanceof Error ? err.message : String(err)}` };
  }
  return {
    ok: true,
    file: outFile,
    sizeBytes,
    sha256: hash.digest("hex"),
    unpackedBytes,
    entryCount: manifest.entries.length,
  };
}

async function* one(b: Buffer): AsyncIterable<Buffer> {
  yield b;
}

type Walked =
  | { ok: true; manifest: CacheManifest; sources: (string | null)[]; unpackedBytes: number }
  | { ok: false; reason: string };

async function buildManifest(workspaceDir: string, paths: readonly string[], budget: PackBudget): Promise<Walked> {
  const workspaceReal = await realpath(workspaceDir);
  const entries: CacheManifestEntry[] = [];
  const sources: (string | null)[] = [];
  let bytes = 0;
  for (const [i, declared] of paths.entries()) {
    const problem = cachePathProblem(declared);
    if (problem) return { ok: false, reason: `cache path ${JSON.stringify(declared)} ${problem}` };
    const root = path.join(workspaceReal, declared);
    const st = await lstat(root).catch(() => null);
    if (!st) return { ok: false, reason: `cache path ${JSON.stringify(declared)} does not exist after the steps` };
    if (!st.isDirectory()) return { ok: false, reason: `cache path ${JSON.stringify(declared)} is not a directory` };
    // A symlinked parent would make us pack some other part of the host.
    if ((await realpath(root)) !== root)
      return { ok: false, reason: `cache path ${JSON.stringify(declared)} goes through a symbolic link` };
    const stack: { abs: string; rel: string[] }[] = [{ abs: root, rel: [] }];
    while (stack.length > 0) {
      const { abs, rel } = stack.pop()!;
      const s = await lstat(abs);
      const name = [String(i), ...rel].join("/");
      if (entries.length >= budget.maxEntries)
        return { ok: false, reason: `the cache has more than ${budget.maxEntries} entries` };
      if (s.isDirectory()) {
        entries.push({ type: "dir", path: name, mode: s.mode & 0o777 });
        sources.push(null);
        const children = (await readdir(abs)).sort().reverse();
        for (const c of children) stack.push({ abs: path.join(abs, c), rel: [...rel, c] });
      } else if (s.isFile()) {
        bytes += s.size;
        if (bytes > budget.maxBytes) return { ok: false, reason: `the cache is larger than ${budget.maxBytes} bytes` };
        entries.push({ type: "file", path: name, mode: s.mode & 0o777, size: s.size, sha256: await hashFile(abs) });
        sources.push(abs);
      } else if (s.isSymbolicLink()) {
        const target = await readlink(abs);
        const bad = cacheSymlinkProblem(rel, target);
        if (bad) return { ok: false, reason: `${JSON.stringify(path.join(declared, ...rel))} ${bad}` };
        entries.push({ type: "symlink", path: name, target });
        sources.push(null);
      } else {
        return {
          ok: false,
          reason: `${JSON.stringify(path.join(declared, ...rel))} is not a file, directory or symbolic link`,
        };
      }
    }
  }
  return { ok: true, manifest: { format: 1, paths: [...paths], entries }, sources, unpackedBytes: bytes };
}

async function hashFile(file: string): Promise<string> {
  const h = createHash("sha256");
  for await (const c of createReadStream(file, { highWaterMark: 1024 * 1024 })) h.update(c as Buffer);
  return h.digest("hex");
}
