// Setting, deleting, listing and exporting (as an envelope) an org's or a repo's secrets. Values
// are encrypted before they reach a statement and never read back here; each change writes its
// audit record in the same transaction (secret.set, secret.delete).
import { withTx, type DbOrTx, type Db } from "@kiln/db";
import { DomainError, MAX_SECRET_VALUE_BYTES } from "@kiln/domain";
import { recordAuditEvent } from "../audit/index.ts";
import { orgDataKey } from "./data-key.ts";
import { dekAad, sealSecret, secretAad } from "./envelope.ts";
import type { KekSource } from "./kek.ts";
import { assertSecretName, type SecretTarget } from "./secret-target.ts";

export interface SecretView {
  name: string;
  scope: string;
  version: number;
  updated_by: string;
  updated_at: string;
  created_at: string;
}

export async function setSecret(
  db: Db,
  keks: KekSource,
  input: { target: SecretTarget; name: string; value: string; actor: string },
): Promise<SecretView> {
  const { target, name, value } = input;
  assertSecretName(name);
  const bytes = Buffer.byteLength(value, "utf8");
  if (bytes === 0) throw new DomainError("REQUEST.INVALID", "a secret value must not be empty");
  if (bytes > MAX_SECRET_VALUE_BYTES)
    throw new DomainError("SECRET.VALUE_TOO_LARGE", `a secret value is at most ${MAX_SECRET_VALUE_BYTES} bytes`);
  if (value.includes("\0")) throw new DomainError("REQUEST.INVALID", "a secret value must not contain NUL");
  return withTx(db, "set-secret", async (tx) => {
    const dek = await orgDataKey(tx, keks, target.orgId, { create: true });
    try {
      // The row lock orders concurrent sets of one name: versions are never reused.
      const prev = await tx.$queryRaw<{ version: number }[]>`
        SELECT version FROM secret WHERE org_id = ${target.orgId}::uuid AND scope = ${target.scope} AND name = ${name}
        FOR UPDATE`;
      const version = (prev[0]?.version ?? 0) + 1;
      const ciphertext = sealSecret(dek, { orgId: target.orgId, scope: target.scope, name, version }, value);
      const rows = await tx.$queryRaw<{ created_at: Date; updated_at: Date }[]>`
        INSERT INTO secret (org_id, repo_id, environment_id, scope, name, version, ciphertext, updated_by)
        VALUES (${target.orgId}::uuid, ${target.repoId}::uuid, ${target.environmentId ?? null}::uuid, ${target.scope}, ${name},
                ${version}, ${ciphertext}, ${input.actor})
        ON CONFLICT (org_id, scope, name) DO UPDATE
          SET version = EXCLUDED.version, ciphertext = EXCLUDED.ciphertext, updated_by = EXCLUDED.updated_by,
              updated_at = now(), deleted_at = NULL
        RETURNING created_at, updated_at`;
      await recordAuditEvent(tx, {
        orgId: target.orgId,
        kind: "secret.set",
        actor: input.actor,
        subject: `${target.scope}:${name}`,
        data: { scope: target.scope, repo_id: target.repoId, name, version },
      });
      const row = rows[0];
      if (!row) throw new Error("secret upsert returned no row");
      return {
        name,
        scope: target.scope,
        version,
        updated_by: input.actor,
        updated_at: row.updated_at.toISOString(),
        created_at: row.created_at.toISOString(),
      };
    } finally {
      dek.fill(0);
    }
  });
}

export async function deleteSecret(
  db: Db,
  input: { target: SecretTarget; name: string; actor: string },
): Promise<{ name: string; scope: string; version: number }> {
  const { target, name } = input;
  assertSecretName(name);
  return withTx(db, "delete-secret", async (tx) => {
    // The ciphertext goes; the row stays so the next set continues the version sequence.
    const rows = await tx.$queryRaw<{ version: number }[]>`
      UPDATE secret SET ciphertext = NULL, deleted_at = now(), updated_by = ${input.actor}, updated_at = now()
      WHERE org_id = ${target.orgId}::uuid AND scope = ${target.scope} AND name = ${name} AND deleted_at IS NULL
      RETURNING version`;
    const row = rows[0];
    if (!row) throw new DomainError("SECRET.NOT_FOUND", `no secret ${name} here`);
    await recordAuditEvent(tx, {
      orgId: target.orgId,
      kind: "secret.delete",
      actor: input.actor,
      subject: `${target.scope}:${name}`,
      data: { scope: target.scope, repo_id: target.repoId, name, version: row.version },
    });
    return { name, scope: target.scope, version: row.version };
  });
}

/** Names, versions, who changed them and when; never values. Scoped by org in the query. */
export async function listSecrets(
  db: DbOrTx,
  /** `scope` narrows to one scope (`org`, `repo:<id>`); without it every scope of the org is listed. */
  input: { orgId: string; scope?: string },
): Promise<SecretView[]> {
  const scope = input.scope ?? null;
  const rows = await db.$queryRaw<
    { name: string; scope: string; version: number; updated_by: string; updated_at: Date; created_at: Date }[]
  >`
    SELECT name, scope, version, updated_by, updated_at, created_at FROM secret
    WHERE org_id = ${input.orgId}::uuid AND deleted_at IS NULL
      AND (${scope}::text IS NULL OR scope = ${scope})
    ORDER BY scope, name`;
  return rows.map((r) => ({
    name: r.name,
    scope: r.scope,
    version: r.version,
    updated_by: r.updated_by,
    updated_at: r.updated_at.toISOString(),
    created_at: r.created_at.toISOString(),
  }));
}

export interface SecretEnvelope {
  kek_id: string;
  wrapped_dek: string;
  dek_aad: string;
  ciphertext: string;
  aad: string;
  version: number;
}

/**
 * What an operator's backup check needs to decrypt one secret with a standard AES-GCM library and
 * the KEK alone (ADR 0025): the wrapped DEK, the ciphertext (base64) and both AADs. No plaintext,
 * and no key is needed to produce it.
 */
export async function secretEnvelope(
  db: DbOrTx,
  input: { target: SecretTarget; name: string },
): Promise<SecretEnvelope> {
  const { target, name } = input;
  const rows = await db.$queryRaw<
    { kek_id: string; wrapped_dek: Uint8Array; ciphertext: Uint8Array; version: number }[]
  >`
    SELECT k.kek_id, k.wrapped_dek, s.ciphertext, s.version
    FROM secret s JOIN org_secret_key k ON k.org_id = s.org_id
    WHERE s.org_id = ${target.orgId}::uuid AND s.scope = ${target.scope} AND s.name = ${name} AND s.deleted_at IS NULL`;
  const r = rows[0];
  if (!r) throw new DomainError("SECRET.NOT_FOUND", `no secret ${name} here`);
  return {
    kek_id: r.kek_id,
    wrapped_dek: Buffer.from(r.wrapped_dek).toString("base64"),
    dek_aad: dekAad(target.orgId, r.kek_id),
    ciphertext: Buffer.from(r.ciphertext).toString("base64"),
    aad: secretAad(target.orgId, target.scope, name, r.version),
    version: r.version,
  };
}
