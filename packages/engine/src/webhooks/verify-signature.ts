import { createHmac, timingSafeEqual } from "node:crypto";

const SIGNATURE = /^sha256=([0-9a-f]{64})$/;

/** Only sha256 signatures count: a missing, malformed or sha1-only header is refused outright. */
export function hasWellFormedSignature(header: string | null): boolean {
  return header !== null && SIGNATURE.test(header);
}

/** HMAC-SHA256 over the raw body, compared in constant time (GitHub's X-Hub-Signature-256). */
export function verifyGithubSignature(secret: string, rawBody: Uint8Array, header: string | null): boolean {
  const m = header ? SIGNATURE.exec(header) : null;
  if (!m || !m[1]) return false;
  const expected = createHmac("sha256", secret).update(rawBody).digest();
  const given = Buffer.from(m[1], "hex");
  return given.length === expected.length && timingSafeEqual(given, expected);
}
