// Downloads one blob into the image cache, hashing the bytes as they arrive. Only a blob whose
// sha256 matches its digest is renamed into place; a mismatch deletes it and tries once more
// (the registry or a proxy may have served a bad copy), then fails with DIGEST_MISMATCH.
import { createHash } from "node:crypto";
import type { ReadableStream as WebReadableStream } from "node:stream/web";
import { createWriteStream } from "node:fs";
import { rename, rm } from "node:fs/promises";
import { Readable, Transform } from "node:stream";
import { pipeline } from "node:stream/promises";
import { ImageError, type RegistryClient } from "@kiln/oci";
import type { Logger } from "@kiln/logger";
import type { ImageCache } from "./image-cache.ts";

/** A blob download that receives nothing for this long is abandoned (and the attempt retried). */
const BLOB_IDLE_TIMEOUT_MS = 60_000;

export async function fetchBlob(
  cache: ImageCache,
  client: RegistryClient,
  repository: string,
  desc: { digest: string; size: number },
  log: Logger,
  signal?: AbortSignal,
): Promise<{ pulledBytes: number }> {
  let pulledBytes = 0;
  for (let attempt = 1; ; attempt++) {
    const tmp = cache.tempPath("blob", desc.digest);
    try {
      const { body } = await client.openBlob(repository, desc.digest, signal);
      const hash = createHash("sha256");
      let received = 0;
      // The idle timer is armed before the meter exists (it destroys the meter); `meter` is read only
      // when the timer fires, by which time it is assigned.
      const idle: NodeJS.Timeout = setTimeout(
        () =>
          meter.destroy(
            new ImageError("IMAGE.UNREACHABLE", `blob ${desc.digest}: nothing received for ${BLOB_IDLE_TIMEOUT_MS} ms`),
          ),
        BLOB_IDLE_TIMEOUT_MS,
      );
      const meter = new Transform({
        transform(chunk: Buffer, _enc, done) {
          idle.refresh();
          received += chunk.length;
          // The manifest says how big the blob is; a registry streaming more is not sending it.
          if (received > desc.size)
            return done(
              new ImageError(
                "IMAGE.DIGEST_MISMATCH",
                `blob ${desc.digest} is larger than its declared ${desc.size} bytes`,
              ),
            );
          hash.update(chunk);
          done(null, chunk);
        },
      });
      try {
        await pipeline(
          Readable.fromWeb(body as WebReadableStream<Uint8Array>),
          meter,
          createWriteStream(tmp, { mode: 0o600 }),
          ...(signal ? ([{ signal }] as const) : []),
        );
      } finally {
        clearTimeout(idle);
        pulledBytes += received;
      }
      const actual = `sha256:${hash.digest("hex")}`;
      if (actual !== desc.digest || received !== desc.size) {
        throw new ImageError(
          "IMAGE.DIGEST_MISMATCH",
          `blob ${desc.digest}: received ${received} bytes hashing to ${actual} (declared ${desc.size})`,
        );
      }
      await rename(tmp, cache.blobPath(desc.digest));
      await cache.add("blob", desc.digest, received);
      return { pulledBytes };
    } catch (err) {
      if (err instanceof ImageError && err.code === "IMAGE.DIGEST_MISMATCH" && attempt === 1 && !signal?.aborted) {
        log.warn("image blob failed its digest check; discarded, fetching again", {
          digest: desc.digest,
          error: err.message,
        });
        continue;
      }
      throw err;
    } finally {
      await rm(tmp, { force: true });
    }
  }
}
