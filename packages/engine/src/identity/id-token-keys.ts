// ID token signing keys (ADR 0024), kept the way job-token keys are (ADR 0018): rows by kid, the
// unretired one signs, first writer creates it, rotation under an advisory lock. Unlike job-token
// keys the private half is sealed under the identity KEK (identity-kek.ts), and a retired key's
// public half stays published exactly until the last token it signed has expired.
import { createPrivateKey, generateKeyPairSync, randomBytes, type JsonWebKey, type KeyObject } from "node:crypto";
import { withTx, type Db } from "@kiln/db";
import { DomainError } from "@kiln/domain";
import { recordAuditEvent } from "../audit/index.ts";
import { openPrivateKey, sealPrivateKey, type IdentityKek } from "./identity-kek.ts";
import { publicKeyFromJwk } from "./es256-jws.ts";

export interface IdTokenSigner {
  kid: string;
  privateKey: KeyObject;
}

export interface PublishedKey {
  kid: string;
  jwk: JsonWebKey;
  publicKey: KeyObject;
  createdAt: string;
  retiredAt: string | null;
  /** Null for the signing key; else when it drops out of the JWKS. */
  verifyUntil: string | null;
}

// As for job-token keys: a rotation elsewhere is seen within this long, and an unknown kid forces a
// re-read at most this often (garbage tokens must not become a query each).
const MAX_AGE_MS = 60_000;
const UNKNOWN_KID_RELOAD_MS = 1_000;
const ROTATION_LOCK_KEY = 72_616_024;

const signers = new WeakMap<Db, { signer: IdTokenSigner; kekId: string; loadedAt: number }>();
const published = new WeakMap<Db, { keys: PublishedKey[]; loadedAt: number }>();

function newKid(): string {
  return `ik${Date.now().toString(36)}${randomBytes(3).toString("hex")}`;
}

function newKeyRow(kek: IdentityKek): { kid: string; jwk: JsonWebKey; sealed: Buffer } {
  const kid = newKid();
  const { publicKey, privateKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
  const full = publicKey.export({ format: "jwk" });
  const jwk: JsonWebKey = { kty: "EC", crv: "P-256", x: full.x, y: full.y, kid, alg: "ES256", use: "sig" };
  const der = privateKey.export({ format: "der", type: "pkcs8" });
  return { kid, jwk, sealed: sealPrivateKey(kek, kid, der) };
}

/** The key new tokens are signed with; created by the first caller when none exists. */
export async function idTokenSigner(db: Db, kek: IdentityKek, opts: { reload?: boolean } = {}): Promise<IdTokenSigner> {
  const cached = signers.get(db);
  if (!opts.reload && cached && cached.kekId === kek.id && performance.now() - cached.loadedAt <= MAX_AGE_MS)
    return cached.signer;
  const fresh = newKeyRow(kek);
  // First writer wins (the one-active unique index); everyone then reads the same row.
  await db.$executeRaw`
    INSERT INTO id_token_key (kid, public_jwk, private_key_sealed, kek_id)
    SELECT ${fresh.kid}, ${JSON.stringify(fresh.jwk)}::jsonb, ${fresh.sealed}, ${kek.id}
    WHERE NOT EXISTS (SELECT 1 FROM id_token_key WHERE retired_at IS NULL)
    ON CONFLICT DO NOTHING`;
  const rows = await db.$queryRaw<{ kid: string; private_key_sealed: Uint8Array; kek_id: string }[]>`
    SELECT kid, private_key_sealed, kek_id FROM id_token_key WHERE retired_at IS NULL`;
  const row = rows[0];
  if (!row) throw new Error("id-token signing key missing after insert");
  if (row.kek_id !== kek.id)
    throw new DomainError(
      "ID_TOKEN.KEY_UNAVAILABLE",
      `the signing key ${row.kid} is sealed under identity KEK ${row.kek_id}, this process has ${kek.id}: run \`kiln identity rotate-key\` with the new KEK`,
    );
  let der: Buffer;
  try {
    der = openPrivateKey(kek, row.kid, Buffer.from(row.private_key_sealed));
  } catch {
    throw new DomainError(
      "ID_TOKEN.KEY_UNAVAILABLE",
      `the signing key ${row.kid} does not open under identity KEK ${kek.id}`,
    );
  }
  const signer = { kid: row.kid, privateKey: createPrivateKey({ key: der, format: "der", type: "pkcs8" }) };
  signers.set(db, { signer, kekId: kek.id, loadedAt: performance.now() });
  return signer;
}

type KeyRow = {
  kid: string;
  public_jwk: JsonWebKey;
  created_at: Date;
  retired_at: Date | null;
  verify_until: Date | null;
};

function toPublished(r: KeyRow): PublishedKey {
  return {
    kid: r.kid,
    jwk: r.public_jwk,
    publicKey: publicKeyFromJwk(r.public_jwk),
    createdAt: r.created_at.toISOString(),
    retiredAt: r.retired_at?.toISOString() ?? null,
    verifyUntil: r.verify_until?.toISOString() ?? null,
  };
}

/** Every key a token may still be signed with (what the JWKS serves), newest first; read fresh. */
async function loadPublishedIdTokenKeys(db: Db): Promise<PublishedKey[]> {
  const rows = await db.$queryRaw<KeyRow[]>`
    SELECT kid, public_jwk, created_at, retired_at, verify_until FROM id_token_key
    WHERE retired_at IS NULL OR verify_until > now() ORDER BY created_at DESC, kid`;
  const keys = rows.map(toPublished);
  published.set(db, { keys, loadedAt: performance.now() });
  return keys;
}

/** The published key named `kid` for verification: cached, re-read on an unknown kid (throttled). */
export async function publishedKeyFor(db: Db, kid: string): Promise<PublishedKey | null> {
  const cached = published.get(db);
  const age = cached ? performance.now() - cached.loadedAt : Infinity;
  let keys = cached && age <= MAX_AGE_MS ? cached.keys : await loadPublishedIdTokenKeys(db);
  let key = keys.find((k) => k.kid === kid) ?? null;
  if (!key && cached && age > UNKNOWN_KID_RELOAD_MS && age <= MAX_AGE_MS) {
    keys = await loadPublishedIdTokenKeys(db);
    key = keys.find((k) => k.kid === kid) ?? null;
  }
  return key;
}

/** The public JWK Set (RFC 7517 5): only public members, one per published key. */
export async function idTokenJwks(db: Db): Promise<{ keys: JsonWebKey[] }> {
  const keys = await loadPublishedIdTokenKeys(db);
  return {
    keys: keys.map((k) => ({ kty: "EC", crv: "P-256", x: k.jwk.x, y: k.jwk.y, kid: k.kid, alg: "ES256", use: "sig" })),
  };
}

/** `kiln identity keys`: every key row still stored (published or past its overlap, not yet deleted). */
export async function listIdTokenKeys(
  db: Db,
): Promise<(Omit<PublishedKey, "publicKey" | "jwk"> & { published: boolean })[]> {
  const rows = await db.$queryRaw<(KeyRow & { published: boolean })[]>`
    SELECT kid, public_jwk, created_at, retired_at, verify_until, (retired_at IS NULL OR verify_until > now()) AS published
    FROM id_token_key ORDER BY created_at DESC, kid`;
  return rows.map((r) => ({
    kid: r.kid,
    createdAt: r.created_at.toISOString(),
    retiredAt: r.retired_at?.toISOString() ?? null,
    verifyUntil: r.verify_until?.toISOString() ?? null,
    published: r.published,
  }));
}

/**
 * `kiln identity rotate-key`: a new key signs at once, the old one stays published until the last
 * token it signed expires. Every mint holds a FOR SHARE lock on the key row it signs with (see
 * mint-id-token.ts), so the FOR UPDATE here waits for in-flight mints, and the next statement (a
 * new snapshot under READ COMMITTED) sees every token the old key will ever have signed; mints
 * that queue behind the rotation find their key retired and sign with the new one. Keys past their
 * overlap are deleted.
 */
export async function rotateIdTokenKey(
  db: Db,
  kek: IdentityKek,
  opts: { actor?: string } = {},
): Promise<{ kid: string; retired: string | null; retiredVerifyUntil: string | null }> {
  const fresh = newKeyRow(kek);
  const result = await withTx(db, "rotate-id-token-key", async (tx) => {
    await tx.$executeRaw`SELECT pg_advisory_xact_lock(${ROTATION_LOCK_KEY})`;
    const current = await tx.$queryRaw<{ kid: string }[]>`
      SELECT kid FROM id_token_key WHERE retired_at IS NULL FOR UPDATE`;
    const old = current[0]?.kid ?? null;
    let verifyUntil: Date | null = null;
    if (old) {
      const r = await tx.$queryRaw<{ verify_until: Date }[]>`
        UPDATE id_token_key SET retired_at = now(),
          verify_until = GREATEST(now(), (SELECT max(expires_at) FROM id_token WHERE kid = ${old}))
        WHERE kid = ${old} RETURNING verify_until`;
      verifyUntil = r[0]?.verify_until ?? null;
    }
    await tx.$executeRaw`
      INSERT INTO id_token_key (kid, public_jwk, private_key_sealed, kek_id)
      VALUES (${fresh.kid}, ${JSON.stringify(fresh.jwk)}::jsonb, ${fresh.sealed}, ${kek.id})`;
    await tx.$executeRaw`DELETE FROM id_token_key WHERE verify_until <= now() AND kid <> ${old ?? ""}`;
    const r = { kid: fresh.kid, retired: old, retiredVerifyUntil: verifyUntil?.toISOString() ?? null };
    // Platform-wide (no org): the signing key of every org's tokens changed.
    await recordAuditEvent(tx, {
      orgId: null,
      kind: "id_token_key.rotated",
      actor: opts.actor ?? "system:identity",
      subject: fresh.kid,
      data: { ...r, kek_id: kek.id },
    });
    return r;
  });
  signers.delete(db);
  published.delete(db);
  return result;
}
