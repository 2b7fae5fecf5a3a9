import { createHash } from "node:crypto";
import { ImageError } from "./errors.ts";

/** Only sha256 is accepted: it is what every registry uses, and one algorithm is one less trap. */
export const DIGEST_RE = /^sha256:[0-9a-f]{64}$/;

export function sha256Digest(bytes: Uint8Array): string {
  return `sha256:${createHash("sha256").update(bytes).digest("hex")}`;
}

export function assertDigest(digest: string, what = "digest"): string {
  if (!DIGEST_RE.test(digest))
    throw new ImageError(
      "IMAGE.BAD_MANIFEST",
      `${what} ${JSON.stringify(digest.slice(0, 100))} is not a sha256 digest`,
    );
  return digest;
}

/** The hex part, used for file names (safe: checked by DIGEST_RE first). */
export function digestHex(digest: string): string {
  return assertDigest(digest).slice("sha256:".length);
}

/** Throws DIGEST_MISMATCH unless `bytes` hash to `expected`. */
export function verifyBytes(bytes: Uint8Array, expected: string, what: string): void {
  const actual = sha256Digest(bytes);
  if (actual !== expected) {
    throw new ImageError("IMAGE.DIGEST_MISMATCH", `${what}: expected ${expected}, received bytes hash to ${actual}`);
  }
}
