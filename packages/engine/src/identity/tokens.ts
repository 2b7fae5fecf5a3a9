import { createHash, createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import type { Db } from "@kiln/db";
import { JOB_TOKEN_TTL_MS, jobTokenKeyring, type JobTokenKeyring, type SigningKey } from "./job-token-keys.ts";

// Bearer secrets (API tokens, host credentials) are shown once and stored only as SHA-256 hashes:
// they are high-entropy random strings, so a slow KDF adds nothing but latency on every request.
export function newSecret(prefix: string): string {
  return `${prefix}_${randomBytes(24).toString("base64url")}`;
}

export function hashSecret(secret: string): string {
  return createHash("sha256").update(secret).digest("hex");
}

/**
 * Job-scoped tokens carry (job, attempt, epoch) and are HMAC-signed with a platform key the control
 * plane keeps in its database sealed under the identity KEK (job-token-keys.ts). The signature
 * proves origin; every use is still checked against the current epoch in PostgreSQL, which is what
 * fences a stale attempt.
 */
export interface JobTokenClaims {
  jobId: string;
  attemptId: string;
  epoch: number;
}

// An unknown kid forces a re-read (another process may have just rotated), but at most
// this often: garbage tokens must not turn into a database query each.
const UNKNOWN_KID_RELOAD_MS = 1_000;

export function signJobToken(key: SigningKey, c: JobTokenClaims, now = Date.now()): string {
  const body = Buffer.from(
    JSON.stringify({ j: c.jobId, a: c.attemptId, e: c.epoch, x: now + JOB_TOKEN_TTL_MS }),
  ).toString("base64url");
  const mac = createHmac("sha256", key.key).update(`${key.kid}.${body}`).digest("base64url");
  return `kjt_${key.kid}.${body}.${mac}`;
}

export type JobTokenCheck =
  | { ok: true; claims: JobTokenClaims }
  | { ok: false; reason: "malformed" | "unknown_kid" | "bad_signature" | "key_retired" | "expired" };

/** Verifies signature, key overlap and expiry; the epoch is checked by the caller's own query. */
export function checkJobToken(ring: JobTokenKeyring, token: string, now = Date.now()): JobTokenCheck {
  const m = /^kjt_([A-Za-z0-9]{1,16})\.([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]+)$/.exec(token);
  if (!m || !m[1] || !m[2] || !m[3]) return { ok: false, reason: "malformed" };
  const k = ring.verifying.get(m[1]);
  if (!k) return { ok: false, reason: "unknown_kid" };
  const expected = createHmac("sha256", k.key).update(`${m[1]}.${m[2]}`).digest();
  const given = Buffer.from(m[3], "base64url");
  if (given.length !== expected.length || !timingSafeEqual(given, expected))
    return { ok: false, reason: "bad_signature" };
  // Checked after the signature, so the answer says nothing about keys to a forger.
  if (k.verifyUntil !== null && now >= k.verifyUntil) return { ok: false, reason: "key_retired" };
  try {
    const o = JSON.parse(Buffer.from(m[2], "base64url").toString("utf8")) as {
      j?: unknown;
      a?: unknown;
      e?: unknown;
      x?: unknown;
    };
    if (typeof o.j !== "string" || typeof o.a !== "string" || typeof o.e !== "number" || typeof o.x !== "number")
      return { ok: false, reason: "malformed" };
    if (now >= o.x) return { ok: false, reason: "expired" };
    return { ok: true, claims: { jobId: o.j, attemptId: o.a, epoch: o.e } };
  } catch {
    return { ok: false, reason: "malformed" };
  }
}

export function verifyJobToken(ring: JobTokenKeyring, token: string, now = Date.now()): JobTokenClaims | null {
  const r = checkJobToken(ring, token, now);
  return r.ok ? r.claims : null;
}

/** The keyring, re-read once (throttled) when the token names a kid this process has not seen. */
export async function verifyJobTokenIn(db: Db, token: string): Promise<JobTokenCheck> {
  const first = checkJobToken(await jobTokenKeyring(db), token);
  if (first.ok || first.reason !== "unknown_kid") return first;
  return checkJobToken(await jobTokenKeyring(db, { reloadIfOlderThanMs: UNKNOWN_KID_RELOAD_MS }), token);
}
