// The crypto-shredding passes of the artifact bench (issue 21, docs/adr/0037): what the host agent
// does around an upload and a restore once artifacts are sealed, run on the same files — seal the
// frozen plaintext into the chunked AES-256-GCM framing before the parts go up, open the downloaded
// object back (authenticating every chunk, hashing the plaintext) before it is placed.
import { createHash, randomBytes, randomUUID } from "node:crypto";
import { createReadStream, createWriteStream } from "node:fs";
import { stat } from "node:fs/promises";
import { Transform } from "node:stream";
import { pipeline } from "node:stream/promises";
import { OpenStream, SealStream, type DataKey } from "@kiln/engine";

export function benchDataKey(): DataKey {
  return { id: randomUUID(), key: randomBytes(32) };
}

function hashing(h: ReturnType<typeof createHash>): Transform {
  return new Transform({
    transform(chunk: Buffer, _e, done) {
      h.update(chunk);
      done(null, chunk);
    },
  });
}

/**
 * Seals `src` into `dst` in one pass, hashing the sealed bytes as they are written, and describes
 * `dst` as a frozen artifact (the stamp as freeze.ts takes it): the agent seals into its spool, so
 * the sealed file is not frozen (copied and hashed) a second time.
 */
export async function sealFile(
  key: DataKey,
  src: string,
  dst: string,
): Promise<{ file: string; sizeBytes: number; sha256: string; stamp: string }> {
  const h = createHash("sha256");
  await pipeline(
    createReadStream(src, { highWaterMark: 1 << 20 }),
    new SealStream(key),
    hashing(h),
    createWriteStream(dst),
  );
  const s = await stat(dst, { bigint: true });
  return {
    file: dst,
    sizeBytes: Number(s.size),
    sha256: h.digest("hex"),
    stamp: `${s.dev}:${s.ino}:${s.size}:${s.mtimeNs}:${s.ctimeNs}`,
  };
}

/** Opens `src` into `dst`; the plaintext's SHA-256 (what provenance names). */
export async function openFile(key: DataKey, src: string, dst: string): Promise<string> {
  const h = createHash("sha256");
  await pipeline(
    createReadStream(src, { highWaterMark: 1 << 20 }),
    new OpenStream(() => key),
    hashing(h),
    createWriteStream(dst),
  );
  return h.digest("hex");
}
