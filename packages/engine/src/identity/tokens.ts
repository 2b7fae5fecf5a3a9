import { createHash, createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { withTx, type Db } from "@kiln/db";

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

/**
 * How long a job token is valid: longer than the longest job (WORKFLOW_LIMITS.maxTimeoutMinutes,
 * 24 h) plus its finalisation, so no running attempt outlives its token. A retired key verifies for
 * this long after its retirement (docs/adr/0016).
 */
export const JOB_TOKEN_TTL_MS = 26 * 3600 * 1000;

/** The key that signs new job tokens, named by its key id. */
export interface SigningKey {
  kid: string;
  key: Buffer;
}

/** Every key that may still verify: the signing key and retired keys inside their overlap. */
export interface JobTokenKeyring {
  signing: SigningKey;
  verifying: Map<string, { key: Buffer; verifyUntil: number | null }>;
}

// Keys are re-read at most this often, so a rotation made by another process is picked up within
// it (its previous key keeps verifying meanwhile, so nothing is refused during the lag).
const KEYRING_MAX_AGE_MS = 60_000;
// An unknown kid forces a re-read (another process may have just rotated), but at most this often:
// garbage tokens must not turn into a database query each.
const UNKNOWN_KID_RELOAD_MS = 1_000;

const keyrings = new WeakMap<Db, { ring: JobTokenKeyring; loadedAt: number }>();

export async function jobTokenKeyring(db: Db, opts: { reloadIfOlderThanMs?: number } = {}): Promise<JobTokenKeyring> {
  const cached = keyrings.get(db);
  const maxAge = opts.reloadIfOlderThanMs ?? KEYRING_MAX_AGE_MS;
  if (cached && performance.now() - cached.loadedAt <= maxAge) return cached.ring;
  const ring = await loadKeyring(db);
  keyrings.set(db, { ring, loadedAt: performance.now() });
  return ring;
}

async function loadKeyring(db: Db): Promise<JobTokenKeyring> {
  // First writer wins (one unretired key, a unique index); every process then reads the same key.
  await db.$executeRaw`
    INSERT INTO job_token_key (kid, secret)
    SELECT ${newKid()}, ${randomBytes(32).toString("base64")}
    WHERE NOT EXISTS (SELECT 1 FROM job_token_key WHERE retired_at IS NULL)
    ON CONFLICT DO NOTHING`;
  const rows = await db.$queryRaw<{ kid: string; secret: string; retired: boolean; verify_until: Date | null }[]>`
    SELECT kid, secret, retired_at IS NOT NULL AS retired, verify_until FROM job_token_key
    WHERE retired_at IS NULL OR verify_until > now()`;
  const active = rows.find((r) => !r.retired);
  if (!active) throw new Error("job-token signing key missing after insert");
  const verifying = new Map(
    rows.map((r) => [r.kid, { key: Buffer.from(r.secret, "base64"), verifyUntil: r.verify_until?.getTime() ?? null }]),
  );
  return { signing: { kid: active.kid, key: Buffer.from(active.secret, "base64") }, verifying };
}

/** The key new job tokens are signed with. */
export async function platformKey(db: Db): Promise<SigningKey> {
  return (await jobTokenKeyring(db)).signing;
}

const ROTATION_LOCK_KEY = 72_616_016; // arbitrary, constant (migrate.ts uses 72_616_001)

function newKid(): string {
  return `k${Date.now().toString(36)}${randomBytes(2).toString("hex")}`;
}

/**
 * Retires the signing key and installs a new one (`kiln job-key rotate`, or the workers' schedule
 * when the key is older than `ifOlderThanMs`). The retired key verifies for JOB_TOKEN_TTL_MS more:
 * every token it signed has expired by then. Keys past their overlap are deleted.
 */
export async function rotateJobTokenKey(
  db: Db,
  opts: { ifOlderThanMs?: number } = {},
): Promise<{ rotated: boolean; kid: string; retired: string | null }> {
  const kid = newKid();
  const secret = randomBytes(32).toString("base64");
  const result = await withTx(db, "rotate-job-token-key", async (tx) => {
    // Serialises concurrent rotations (every worker runs the schedule): a row lock would not do,
    // since the row a waiter locked is retired by the time it proceeds and it would rotate again.
    // Under READ COMMITTED the next statement then sees the winner's key and finds nothing due.
    await tx.$executeRaw`SELECT pg_advisory_xact_lock(${ROTATION_LOCK_KEY})`;
    const current = await tx.$queryRaw<{ kid: string; due: boolean }[]>`
      SELECT kid, ${opts.ifOlderThanMs ?? null}::float8 IS NULL
                  OR created_at < now() - make_interval(secs => ${(opts.ifOlderThanMs ?? 0) / 1000}::float8) AS due
      FROM job_token_key WHERE retired_at IS NULL`;
    const cur = current[0];
    if (cur && !cur.due) return { rotated: false, kid: cur.kid, retired: null };
    await tx.$executeRaw`
      UPDATE job_token_key SET retired_at = now(), verify_until = now() + make_interval(secs => ${JOB_TOKEN_TTL_MS / 1000}::float8)
      WHERE retired_at IS NULL`;
    await tx.$executeRaw`INSERT INTO job_token_key (kid, secret) VALUES (${kid}, ${secret})`;
    await tx.$executeRaw`DELETE FROM job_token_key WHERE verify_until < now()`;
    return { rotated: true, kid, retired: cur?.kid ?? null };
  });
  if (result.rotated) keyrings.delete(db);
  return result;
}

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
