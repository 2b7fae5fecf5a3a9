// Job-token HMAC keys (ADR 0018), sealed at rest under the identity KEK (issue 28, ADR 0018
// "Amended (issue 28)"; the KEK and its format are ADR 0024's). Rows by kid: the unretired one
// signs, retired ones verify until their tokens have expired, the first writer creates the key,
// rotation runs under an advisory lock. The database holds only sealed bytes naming their KEK, so a
// reader of it (a backup, a replica, a read-only role) cannot mint a job token.
//
// The KEK reaches this module bound to the Db a process created (bindJobTokenKek, at boot in the
// web app, the workers and the CLI), so the claim, every job-token check and every rotation find it
// without each call site carrying it. A Db with no KEK bound refuses: nothing falls back to clear.
import { randomBytes } from "node:crypto";
import { withTx, type Db } from "@kiln/db";
import { DomainError } from "@kiln/domain";
import { openJobTokenSecret, sealJobTokenSecret, type IdentityKek } from "./identity-kek.ts";

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
const ROTATION_LOCK_KEY = 72_616_016; // arbitrary, constant (migrate.ts uses 72_616_001)

const keks = new WeakMap<Db, () => Promise<IdentityKek>>();
const keyrings = new WeakMap<Db, { ring: JobTokenKeyring; loadedAt: number }>();

/**
 * Binds the identity KEK (or a loader of it, called on each keyring load and expected to cache) to
 * a Db: every job-token operation on that Db seals and opens keys with it.
 */
export function bindJobTokenKek(db: Db, kek: IdentityKek | (() => Promise<IdentityKek>)): void {
  keks.set(db, typeof kek === "function" ? kek : () => Promise.resolve(kek));
  keyrings.delete(db);
}

async function kekFor(db: Db): Promise<IdentityKek> {
  const load = keks.get(db);
  if (!load)
    throw new DomainError(
      "JOB_TOKEN.KEY_UNAVAILABLE",
      "no identity KEK in this process: job-token keys are sealed under it (KILN_IDENTITY_KEK_FILE)",
    );
  try {
    return await load();
  } catch (err) {
    throw new DomainError(
      "JOB_TOKEN.KEY_UNAVAILABLE",
      `job-token keys cannot be opened: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
}

function newKid(): string {
  return `k${Date.now().toString(36)}${randomBytes(2).toString("hex")}`;
}

function newKeyRow(kek: IdentityKek): { kid: string; sealed: Buffer } {
  const kid = newKid();
  return { kid, sealed: sealJobTokenSecret(kek, kid, randomBytes(32)) };
}

/**
 * Seals the rows still in clear (made before migration 0031, or by a process not yet upgraded) and
 * nulls their clear column. Guarded on the clear value read: of two processes sealing at once, one
 * update matches and the other's finds the row already sealed (the same secret either way).
 */
async function sealClearKeys(db: Db, kek: IdentityKek): Promise<void> {
  const clear = await db.$queryRaw<{ kid: string; secret: string }[]>`
    SELECT kid, secret FROM job_token_key WHERE secret IS NOT NULL`;
  for (const r of clear) {
    const sealed = sealJobTokenSecret(kek, r.kid, Buffer.from(r.secret, "base64"));
    await db.$executeRaw`
      UPDATE job_token_key SET secret_sealed = ${sealed}, kek_id = ${kek.id}, secret = NULL
      WHERE kid = ${r.kid} AND secret = ${r.secret}`;
  }
}

function sealedElsewhere(kid: string, rowKek: string, kek: IdentityKek): DomainError {
  return new DomainError(
    "JOB_TOKEN.KEY_UNAVAILABLE",
    `the job-token signing key ${kid} is sealed under identity KEK ${rowKek}, this process has ${kek.id}: give it the KEK file the other processes read, or run \`kiln job-key rotate\` with the new KEK`,
  );
}

type KeyRow = {
  kid: string;
  secret: string | null;
  secret_sealed: Uint8Array | null;
  kek_id: string | null;
  retired: boolean;
  verify_until: Date | null;
};

function openRow(r: KeyRow, kek: IdentityKek): Buffer {
  // Inserted in clear since this load's sealing pass (a process not yet upgraded): usable, and
  // sealed by the next load.
  if (r.secret !== null) return Buffer.from(r.secret, "base64");
  if (r.secret_sealed === null || r.kek_id === null) throw new Error(`job-token key ${r.kid} has no secret`);
  try {
    return openJobTokenSecret(kek, r.kid, Buffer.from(r.secret_sealed));
  } catch {
    throw new DomainError(
      "JOB_TOKEN.KEY_UNAVAILABLE",
      `the job-token key ${r.kid} does not open under identity KEK ${kek.id} (the row is damaged or not its own)`,
    );
  }
}

async function loadKeyring(db: Db, kek: IdentityKek): Promise<JobTokenKeyring> {
  const fresh = newKeyRow(kek);
  // First writer wins (one unretired key, a unique index); every process then reads the same key.
  await db.$executeRaw`
    INSERT INTO job_token_key (kid, secret_sealed, kek_id)
    SELECT ${fresh.kid}, ${fresh.sealed}, ${kek.id}
    WHERE NOT EXISTS (SELECT 1 FROM job_token_key WHERE retired_at IS NULL)
    ON CONFLICT DO NOTHING`;
  await sealClearKeys(db, kek);
  const rows = await db.$queryRaw<KeyRow[]>`
    SELECT kid, secret, secret_sealed, kek_id, retired_at IS NOT NULL AS retired, verify_until FROM job_token_key
    WHERE retired_at IS NULL OR verify_until > now()`;
  const active = rows.find((r) => !r.retired);
  if (!active) throw new Error("job-token signing key missing after insert");
  if (active.kek_id !== null && active.kek_id !== kek.id) throw sealedElsewhere(active.kid, active.kek_id, kek);
  const verifying = new Map<string, { key: Buffer; verifyUntil: number | null }>();
  for (const r of rows) {
    // A retired key sealed under a previous KEK (the KEK was changed by a rotation) is left out:
    // the few tokens it signed are refused, which fails closed, rather than every claim failing.
    if (r.retired && r.kek_id !== null && r.kek_id !== kek.id) continue;
    verifying.set(r.kid, { key: openRow(r, kek), verifyUntil: r.verify_until?.getTime() ?? null });
  }
  const signing = verifying.get(active.kid);
  if (!signing) throw new Error("job-token signing key missing after open");
  return { signing: { kid: active.kid, key: signing.key }, verifying };
}

export async function jobTokenKeyring(db: Db, opts: { reloadIfOlderThanMs?: number } = {}): Promise<JobTokenKeyring> {
  const cached = keyrings.get(db);
  const maxAge = opts.reloadIfOlderThanMs ?? KEYRING_MAX_AGE_MS;
  if (cached && performance.now() - cached.loadedAt <= maxAge) return cached.ring;
  const ring = await loadKeyring(db, await kekFor(db));
  keyrings.set(db, { ring, loadedAt: performance.now() });
  return ring;
}

/** The key new job tokens are signed with. */
export async function platformKey(db: Db): Promise<SigningKey> {
  return (await jobTokenKeyring(db)).signing;
}

/**
 * Retires the signing key and installs a new one, sealed under this process's KEK (`kiln job-key
 * rotate`, or the workers' schedule when the key is older than `ifOlderThanMs`). The retired key
 * verifies for JOB_TOKEN_TTL_MS more: every token it signed has expired by then. Keys past their
 * overlap are deleted. The scheduled rotation never changes the KEK: a worker reading another KEK
 * file than the web app's would install a key the web app cannot open and stop every claim; a
 * manual rotation is how an operator moves the keys to a new KEK.
 */
export async function rotateJobTokenKey(
  db: Db,
  opts: { ifOlderThanMs?: number } = {},
): Promise<{ rotated: boolean; kid: string | null; retired: string | null; kekId: string }> {
  const kek = await kekFor(db);
  await sealClearKeys(db, kek);
  const fresh = newKeyRow(kek);
  const result = await withTx(db, "rotate-job-token-key", async (tx) => {
    // Serialises concurrent rotations (every worker runs the schedule): a row lock would not do,
    // since the row a waiter locked is retired by the time it proceeds and it would rotate again.
    // Under READ COMMITTED the next statement then sees the winner's key and finds nothing due.
    await tx.$executeRaw`SELECT pg_advisory_xact_lock(${ROTATION_LOCK_KEY})`;
    const current = await tx.$queryRaw<{ kid: string; kek_id: string | null; due: boolean }[]>`
      SELECT kid, kek_id, ${opts.ifOlderThanMs ?? null}::float8 IS NULL
                  OR created_at < now() - make_interval(secs => ${(opts.ifOlderThanMs ?? 0) / 1000}::float8) AS due
      FROM job_token_key WHERE retired_at IS NULL`;
    const cur = current[0];
    // No key yet: the first claim creates it. The schedule does not, for the reason above.
    if (!cur && opts.ifOlderThanMs !== undefined) return { rotated: false, kid: null, retired: null, kekId: kek.id };
    if (cur && !cur.due) return { rotated: false, kid: cur.kid, retired: null, kekId: cur.kek_id ?? kek.id };
    if (cur?.kek_id && cur.kek_id !== kek.id && opts.ifOlderThanMs !== undefined)
      throw sealedElsewhere(cur.kid, cur.kek_id, kek);
    await tx.$executeRaw`
      UPDATE job_token_key SET retired_at = now(), verify_until = now() + make_interval(secs => ${JOB_TOKEN_TTL_MS / 1000}::float8)
      WHERE retired_at IS NULL`;
    await tx.$executeRaw`
      INSERT INTO job_token_key (kid, secret_sealed, kek_id) VALUES (${fresh.kid}, ${fresh.sealed}, ${kek.id})`;
    await tx.$executeRaw`DELETE FROM job_token_key WHERE verify_until < now()`;
    return { rotated: true, kid: fresh.kid, retired: cur?.kid ?? null, kekId: kek.id };
  });
  if (result.rotated) keyrings.delete(db);
  return result;
}
