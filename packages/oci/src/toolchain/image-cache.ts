// The toolchain image cache (docs/adr/0040), outside the repository: content-addressed blobs plus
// one small JSON record per layer key and per image input hash. A record is written only after its
// blobs are complete (rename into place), so an interrupted build leaves nothing that looks done.
import { createHash } from "node:crypto";
import { createReadStream, createWriteStream, existsSync } from "node:fs";
import { mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { pipeline } from "node:stream/promises";
import { Transform } from "node:stream";
import { createGzip } from "node:zlib";
import { sha256Digest } from "../digest.ts";
import type { LayerDescriptor } from "../image-builder.ts";

export class ImageCache {
  constructor(readonly dir: string) {}

  blobPath(digest: string): string {
    return path.join(this.dir, "blobs", "sha256", digest.replace(/^sha256:/, ""));
  }

  get aptArchives(): string {
    return path.join(this.dir, "apt-archives");
  }

  get npmTarballs(): string {
    return path.join(this.dir, "npm");
  }

  /** A fresh scratch directory for one build (removed by the caller). */
  async workDir(key: string): Promise<string> {
    const d = path.join(this.dir, "work", `${key.slice(0, 16)}-${process.pid}`);
    await rm(d, { recursive: true, force: true });
    await mkdir(d, { recursive: true });
    return d;
  }

  async readRecord<T>(kind: "layers" | "images" | "names", key: string): Promise<T | null> {
    const file = path.join(this.dir, kind, `${key}.json`);
    if (!existsSync(file)) return null;
    return JSON.parse(await readFile(file, "utf8")) as T;
  }

  async writeRecord(kind: "layers" | "images" | "names", key: string, value: unknown): Promise<void> {
    const dir = path.join(this.dir, kind);
    await mkdir(dir, { recursive: true });
    const tmp = path.join(dir, `.${key}.${process.pid}.tmp`);
    await writeFile(tmp, `${JSON.stringify(value, null, 2)}\n`);
    await rename(tmp, path.join(dir, `${key}.json`));
  }

  async putBlob(bytes: Buffer): Promise<string> {
    const digest = sha256Digest(bytes);
    const file = this.blobPath(digest);
    if (!existsSync(file)) {
      await mkdir(path.dirname(file), { recursive: true });
      await writeFile(`${file}.tmp`, bytes);
      await rename(`${file}.tmp`, file);
    }
    return digest;
  }

  /**
   * Gzips an uncompressed layer tar into the blob store, hashing both sides in one pass. Node's
   * gzip writes no name and a zero mtime, so the same tar gives the same blob with the same zlib.
   */
  async putLayer(tarFile: string): Promise<LayerDescriptor> {
    const tarHash = createHash("sha256");
    const gzHash = createHash("sha256");
    let size = 0;
    const tmp = path.join(this.dir, "blobs", `.layer-${process.pid}-${Date.now()}.tmp`);
    await mkdir(path.dirname(tmp), { recursive: true });
    const tap = (hash: ReturnType<typeof createHash>, count: boolean) =>
      new Transform({
        transform(chunk: Buffer, _enc, cb) {
          hash.update(chunk);
          if (count) size += chunk.length;
          cb(null, chunk);
        },
      });
    await pipeline(
      createReadStream(tarFile),
      tap(tarHash, false),
      createGzip({ level: 6 }),
      tap(gzHash, true),
      createWriteStream(tmp),
    );
    const digest = `sha256:${gzHash.digest("hex")}`;
    const file = this.blobPath(digest);
    await mkdir(path.dirname(file), { recursive: true });
    await rename(tmp, file);
    return { digest, size, diffId: `sha256:${tarHash.digest("hex")}` };
  }
}

/** sha256 of canonical JSON (keys sorted at every level): the cache keys. */
export function hashInputs(value: unknown): string {
  const canon = (v: unknown): unknown =>
    Array.isArray(v)
      ? v.map(canon)
      : v && typeof v === "object"
        ? Object.fromEntries(
            Object.entries(v)
              .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
              .map(([k, x]) => [k, canon(x)]),
          )
        : v;
  return createHash("sha256")
    .update(JSON.stringify(canon(value)))
    .digest("hex");
}
