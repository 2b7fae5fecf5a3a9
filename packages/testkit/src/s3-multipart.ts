// The embedded S3 store's CompleteMultipartUpload, done as S3 does it (ADR 0007).
import { spawn } from "node:child_process";
import { createHash, randomUUID } from "node:crypto";
import { createWriteStream } from "node:fs";
import { mkdir, open, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import { Transform, type Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type S3rver from "s3rver";
import S3Error from "s3rver/lib/models/error.js";

interface S3rverPart {
  number: number;
  etag: string;
}
interface S3rverFilesystemStore {
  getResourcePath(bucket: string, key: string | undefined, resource: string): string;
  putMetadata(bucket: string, key: string, metadata: Record<string, unknown>, md5: string): Promise<void>;
  putObjectMultipart(bucket: string, uploadId: string, parts: S3rverPart[]): Promise<{ size: number; md5: string }>;
  putPart(
    bucket: string,
    uploadId: string,
    partNumber: number,
    content: Readable,
  ): Promise<{ size: number; md5: string }>;
}

/**
 * CompleteMultipartUpload as S3 does it (docs/adr/0007-artifacts.md, "Embedded store"). s3rver
 * 3.7 re-streams every part through an MD5 into a new object: a second full write of the artifact
 * (about one PutObject of it) in the store, where S3, MinIO and R2 assemble in metadata. It also
 * accepts any ETag list. Here the parts' ETags are checked against what the store computed when
 * it received them (InvalidPart otherwise, as S3 answers), the parts are joined by the kernel
 * (copy_file_range via `cat`, no hashing, into a temporary file renamed into place, so no reader
 * sees a half-assembled object), and the object's ETag is S3's multipart form, the MD5 of the
 * parts' binary MD5s followed by "-<part count>". Nothing Kiln verifies depends on this: the
 * finaliser checks that ETag against the agent's own part digests and reads the object back
 * whenever it does not match.
 */
export function assembleMultipartLikeS3(server: S3rver): void {
  const store = (server as unknown as { store: S3rverFilesystemStore }).store;
  // s3rver answers a part PUT when its hashing transform finishes, before the file write has: a
  // completion right behind it could join a part still being written. Answer after the write, and
  // write to a fresh file renamed over the part (with its MD5 written first): a re-upload that
  // dies half-way leaves the previous part and its MD5 as they were, as on S3.
  store.putPart = async (bucket, uploadId, partNumber, content) => {
    const partPath = path.join(store.getResourcePath(bucket, undefined, "uploads"), uploadId, String(partNumber));
    await mkdir(path.dirname(partPath), { recursive: true });
    const incoming = `${partPath}.incoming-${randomUUID()}`;
    const md5 = createHash("md5");
    let size = 0;
    try {
      await pipeline(
        content,
        new Transform({
          transform(chunk: Buffer, _enc, cb) {
            md5.update(chunk);
            size += chunk.length;
            cb(null, chunk);
          },
        }),
        createWriteStream(incoming, { flags: "wx" }),
      );
      const digest = md5.digest("hex");
      await rm(`${partPath}.md5`, { force: true });
      await rename(incoming, partPath);
      await writeFile(`${partPath}.md5`, digest);
      return { size, md5: digest };
    } finally {
      await rm(incoming, { force: true });
    }
  };
  // One completion per upload at a time: a second one (an agent asking again while the first is
  // still joining parts) waits, then finds the upload gone (NoSuchUpload), as on S3.
  const completing = new Map<string, Promise<unknown>>();
  store.putObjectMultipart = (bucket, uploadId, parts) => {
    const id = `${bucket}/${uploadId}`;
    const run = (completing.get(id) ?? Promise.resolve())
      .catch(() => undefined)
      .then(() => assemble(bucket, uploadId, parts));
    completing.set(id, run);
    void run
      .finally(() => {
        if (completing.get(id) === run) completing.delete(id);
      })
      .catch(() => undefined);
    return run;
  };
  async function assemble(
    bucket: string,
    uploadId: string,
    parts: S3rverPart[],
  ): Promise<{ size: number; md5: string }> {
    const uploadDir = path.join(store.getResourcePath(bucket, undefined, "uploads"), uploadId);
    let key: string;
    let metadata: Record<string, unknown>;
    try {
      key = await readFile(path.join(uploadDir, "key"), "utf8");
      metadata = JSON.parse(await readFile(path.join(uploadDir, "metadata"), "utf8")) as Record<string, unknown>;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "ENOENT")
        throw new S3Error(
          "NoSuchUpload",
          "The specified upload does not exist. The upload ID may be invalid, or the upload may have been aborted or completed.",
        );
      throw e;
    }
    for (let i = 1; i < parts.length; i++) {
      if ((parts[i]?.number ?? 0) <= (parts[i - 1]?.number ?? 0))
        throw new S3Error(
          "InvalidPartOrder",
          "The list of parts was not in ascending order. Parts must be ordered by part number.",
        );
    }
    const digests: Buffer[] = [];
    for (const part of parts) {
      const md5 = await readFile(path.join(uploadDir, `${part.number}.md5`), "utf8").catch(() => null);
      if (md5 === null || md5 !== part.etag.replace(/"/g, "").toLowerCase()) {
        throw new S3Error(
          "InvalidPart",
          "One or more of the specified parts could not be found. The part may not have been uploaded, or the specified entity tag may not match the part's entity tag.",
        );
      }
      digests.push(Buffer.from(md5, "hex"));
    }
    const objectPath = store.getResourcePath(bucket, key, "object");
    await mkdir(path.dirname(objectPath), { recursive: true });
    const assembling = path.join(uploadDir, `assembling-${randomUUID()}`);
    try {
      await catInto(
        parts.map((part) => path.join(uploadDir, String(part.number))),
        assembling,
      );
      const size = (await stat(assembling)).size;
      const etag = `${createHash("md5").update(Buffer.concat(digests)).digest("hex")}-${parts.length}`;
      // Metadata (with the ETag) first, then the bytes appear whole in one rename.
      await store.putMetadata(bucket, key, metadata, etag);
      await rename(assembling, objectPath);
      await rm(uploadDir, { recursive: true, force: true });
      return { size, md5: etag };
    } finally {
      await rm(assembling, { force: true });
    }
  }
}

async function catInto(files: string[], dest: string): Promise<void> {
  // One part file at least: CompleteMultipartUpload with no parts is MalformedXML upstream.
  const fh = await open(dest, "wx");
  try {
    await new Promise<void>((resolve, reject) => {
      const child = spawn("cat", ["--", ...files], { stdio: ["ignore", fh.fd, "pipe"] });
      let err = "";
      child.stderr?.on("data", (b: Buffer) => (err += b.toString()));
      child.on("error", reject);
      child.on("close", (code) => (code === 0 ? resolve() : reject(new Error(`cat exited ${code}: ${err.trim()}`))));
    });
  } finally {
    await fh.close();
  }
}
