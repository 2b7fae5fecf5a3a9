// Verifying Kiln's ID tokens inside the platform (issue 16, ADR 0024): the secret broker and any
// later relying party call verifyIdToken. Beyond what an outside verifier checks (ES256 signature
// by a published kid, iss, aud, exp, nbf) it asks PostgreSQL whether the token was minted here and
// whether its attempt is still current: a token is dead the moment its job ends, not at exp.
import { sqlPool, type Db } from "@kiln/db";
import { ID_TOKEN_ALG, type IdTokenClaims } from "@kiln/domain";
import { decodeJws, verifyP256Sha256 } from "./es256-jws.ts";
import { publishedKeyFor } from "./id-token-keys.ts";

export type IdTokenRefusal =
  | "malformed"
  | "alg_not_allowed"
  | "unknown_kid"
  | "bad_signature"
  | "wrong_issuer"
  | "wrong_audience"
  | "expired"
  | "not_yet_valid"
  | "unknown_token"
  | "attempt_not_current";

export type IdTokenVerdict =
  | { ok: true; claims: IdTokenClaims; orgId: string; attemptId: string }
  | { ok: false; reason: IdTokenRefusal };

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Verifies a Kiln ID token for `audience` (exactly; null only for introspection, which answers
 * for any audience) issued by `issuer`. Every refusal is a reason, never a throw: relying parties
 * map all of them to one answer, so a forger learns nothing.
 */
export async function verifyIdToken(
  db: Db,
  jwt: string,
  opts: { audience: string | null; issuer: string; nowMs?: number },
): Promise<IdTokenVerdict> {
  const d = decodeJws(jwt.trim());
  if (!d.ok) return { ok: false, reason: "malformed" };
  // Pinned: only ES256 is ever accepted, whatever the header says ("none", HS256 with the public key...).
  if (d.header.alg !== ID_TOKEN_ALG) return { ok: false, reason: "alg_not_allowed" };
  if (!d.header.kid) return { ok: false, reason: "unknown_kid" };
  const key = await publishedKeyFor(db, d.header.kid);
  if (!key) return { ok: false, reason: "unknown_kid" };
  if (!verifyP256Sha256(key.publicKey, d.signingInput, d.signature)) return { ok: false, reason: "bad_signature" };
  const c = d.payload as Partial<IdTokenClaims>;
  if (c.iss !== opts.issuer) return { ok: false, reason: "wrong_issuer" };
  if (opts.audience !== null && c.aud !== opts.audience) return { ok: false, reason: "wrong_audience" };
  const now = Math.floor((opts.nowMs ?? Date.now()) / 1000);
  if (typeof c.exp !== "number" || now >= c.exp) return { ok: false, reason: "expired" };
  if (typeof c.nbf !== "number" || now < c.nbf) return { ok: false, reason: "not_yet_valid" };
  if (typeof c.jti !== "string" || !UUID.test(c.jti)) return { ok: false, reason: "unknown_token" };
  // Plain SQL: one indexed probe per verification (the broker calls this at every job start).
  const r = await sqlPool(db).query<{
    org_id: string;
    attempt_id: string;
    epoch: number;
    job_id: string;
    current: boolean;
  }>({
    name: "verify-id-token-1",
    text: `SELECT t.org_id, t.attempt_id, t.epoch, t.job_id,
                  (a.status = 'running' AND j.current_epoch = a.epoch AND a.epoch = t.epoch AND a.lease_expires_at > now()) AS current
           FROM id_token t JOIN attempt a ON a.id = t.attempt_id JOIN job_run j ON j.id = a.job_id
           WHERE t.jti = $1::uuid AND t.expires_at > now()`,
    values: [c.jti],
  });
  const row = r.rows[0];
  // The row must describe the same attempt the signed claims name (a key compromise aside, always).
  if (!row || row.job_id !== c.job_id || row.epoch !== c.attempt) return { ok: false, reason: "unknown_token" };
  if (!row.current) return { ok: false, reason: "attempt_not_current" };
  return { ok: true, claims: c as IdTokenClaims, orgId: row.org_id, attemptId: row.attempt_id };
}

/**
 * RFC 7662 introspection for a caller authenticated as `callerOrgId`: active only when the token
 * verifies (any audience), its attempt is current and it belongs to the caller's org; anything
 * else, another org's live token included, is `{active: false}` and nothing more (2.2).
 */
export async function introspectIdToken(
  db: Db,
  token: string,
  ctx: { issuer: string; callerOrgId: string },
): Promise<{ active: false } | ({ active: true; token_type: "id_token" } & IdTokenClaims)> {
  const v = await verifyIdToken(db, token, { audience: null, issuer: ctx.issuer });
  if (!v.ok || v.orgId !== ctx.callerOrgId) return { active: false };
  return { active: true, token_type: "id_token", ...v.claims };
}
