import { createHash, createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import type { Db } from "@kiln/db";

// Bearer secrets (API tokens, host credentials) are shown once and stored only as SHA-256 hashes:
// they are high-entropy random strings, so a slow KDF adds nothing but latency on every request.
export function newSecret(prefix: string): string {
  return `${prefix}_${randomBytes(24).toString("base64url")}`;
}

export function hashSecret(secret: string): string {
  return createHash("sha256").update(secret).digest("hex");
}

/**
 * Job-scoped tokens carry (job, attempt, epoch) and are HMAC-signed with a platform key that lives
 * only in the control plane's database. The signature proves origin; every use is still checked
 * against the current epoch in PostgreSQL, which is what fences a stale attempt.
 */
export interface JobTokenClaims {
  jobId: string;
  attemptId: string;
  epoch: number;
}

let cachedKey: { db: Db; key: Buffer } | null = null;

export async function platformKey(db: Db): Promise<Buffer> {
  if (cachedKey && cachedKey.db === db) return cachedKey.key;
  // First writer wins; every process then reads the same key.
  await db.$executeRaw`
    INSERT INTO platform_secret (name, value) VALUES ('job_token_hmac', ${randomBytes(32).toString("base64")})
    ON CONFLICT (name) DO NOTHING`;
  const rows = await db.$queryRaw<{ value: string }[]>`SELECT value FROM platform_secret WHERE name = 'job_token_hmac'`;
  const value = rows[0]?.value;
  if (!value) throw new Error("platform key missing after insert");
  const key = Buffer.from(value, "base64");
  cachedKey = { db, key };
  return key;
}

export function signJobToken(key: Buffer, c: JobTokenClaims): string {
  const body = Buffer.from(JSON.stringify({ j: c.jobId, a: c.attemptId, e: c.epoch })).toString("base64url");
  const mac = createHmac("sha256", key).update(body).digest("base64url");
  return `kjt_${body}.${mac}`;
}

export function verifyJobToken(key: Buffer, token: string): JobTokenClaims | null {
  const m = /^kjt_([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]+)$/.exec(token);
  if (!m || !m[1] || !m[2]) return null;
  const expected = createHmac("sha256", key).update(m[1]).digest();
  const given = Buffer.from(m[2], "base64url");
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
  try {
    const o = JSON.parse(Buffer.from(m[1], "base64url").toString("utf8")) as { j?: unknown; a?: unknown; e?: unknown };
    if (typeof o.j !== "string" || typeof o.a !== "string" || typeof o.e !== "number") return null;
    return { jobId: o.j, attemptId: o.a, epoch: o.e };
  } catch {
    return null;
  }
}
