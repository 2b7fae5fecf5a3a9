// The envelope, exactly as ADR 0025 documents it: a per-org data key (DEK) wrapped under the
// key-encryption key (KEK), each secret value under its org's DEK. The AADs bind every ciphertext
// to where it belongs, so a row copied to another org, scope, name or version does not open.
import { randomBytes } from "node:crypto";
import { DomainError } from "@kiln/domain";
import { gcmOpen, gcmSeal } from "./aead.ts";

const DEK_BYTES = 32;

/** `org`, `repo:<repo_id>` or (issue 18) `env:<environment_id>`. */
export type SecretScope = "org" | `repo:${string}` | `env:${string}`;

export function dekAad(orgId: string, kekId: string): string {
  return `kiln-dek:v1:${orgId}:${kekId}`;
}

export function secretAad(orgId: string, scope: SecretScope, name: string, version: number): string {
  return `kiln-secret:v1:${orgId}:${scope}:${name}:${version}`;
}

export function newDek(): Buffer {
  return randomBytes(DEK_BYTES);
}

export function wrapDek(kek: { id: string; key: Buffer }, orgId: string, dek: Uint8Array): Buffer {
  return gcmSeal(kek.key, dek, dekAad(orgId, kek.id));
}

export function unwrapDek(kek: { id: string; key: Buffer }, orgId: string, wrapped: Uint8Array): Buffer {
  const dek = gcmOpen(kek.key, wrapped, dekAad(orgId, kek.id));
  if (!dek || dek.length !== DEK_BYTES)
    throw new DomainError("SECRET.DECRYPT_FAILED", `the data key of org ${orgId} does not open under KEK ${kek.id}`);
  return dek;
}

export function sealSecret(
  dek: Uint8Array,
  where: { orgId: string; scope: SecretScope; name: string; version: number },
  value: string,
): Buffer {
  return gcmSeal(dek, Buffer.from(value, "utf8"), secretAad(where.orgId, where.scope, where.name, where.version));
}

export function openSecret(
  dek: Uint8Array,
  where: { orgId: string; scope: SecretScope; name: string; version: number },
  sealed: Uint8Array,
): string {
  const plain = gcmOpen(dek, sealed, secretAad(where.orgId, where.scope, where.name, where.version));
  if (!plain) throw new DomainError("SECRET.DECRYPT_FAILED", `secret ${where.name} v${where.version} does not open`);
  const value = plain.toString("utf8");
  plain.fill(0);
  return value;
}
