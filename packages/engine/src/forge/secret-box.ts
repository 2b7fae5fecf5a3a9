import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto";
import { DomainError } from "@kiln/domain";

// Platform secrets at rest (ADR 0028): a forge token is sealed with AES-256-GCM under
// KILN_SECRETS_KEY, which lives in the processes' environment and never in the database, so a
// database dump (or a tenant who reads a backup) holds ciphertext only. The key id (a hash prefix
// of the key) is stored with each value: a rotated key is refused with a clear message instead of
// decrypting to garbage. Format: v1.<kid>.<iv>.<ciphertext>.<tag>, base64url parts.

export interface SecretsKey {
  kid: string;
  key: Buffer;
}

/** KILN_SECRETS_KEY: 32 random bytes, base64 (`openssl rand -base64 32`). */
export function parseSecretsKey(encoded: string): SecretsKey {
  const key = Buffer.from(encoded.trim(), "base64");
  if (key.length !== 32) throw new Error("KILN_SECRETS_KEY must be 32 bytes, base64-encoded (openssl rand -base64 32)");
  return { key, kid: createHash("sha256").update(key).digest("hex").slice(0, 8) };
}

export function sealSecret(k: SecretsKey, plaintext: string, aad: string): string {
  const iv = randomBytes(12);
  const c = createCipheriv("aes-256-gcm", k.key, iv);
  // The additional data binds a sealed value to its row (the repo id): copied to another repo's
  // row it no longer opens.
  c.setAAD(Buffer.from(aad, "utf8"));
  const ct = Buffer.concat([c.update(plaintext, "utf8"), c.final()]);
  return ["v1", k.kid, iv.toString("base64url"), ct.toString("base64url"), c.getAuthTag().toString("base64url")].join(
    ".",
  );
}

export function openSecret(k: SecretsKey, sealed: string, aad: string): string {
  const [v, kid, iv, ct, tag] = sealed.split(".");
  if (v !== "v1" || !kid || !iv || ct === undefined || !tag)
    throw new DomainError("FORGE.SECRET_UNREADABLE", "stored secret is not in the v1 format");
  if (kid !== k.kid)
    throw new DomainError(
      "FORGE.SECRET_KEY_MISMATCH",
      `stored secret was sealed with key ${kid}, this process has ${k.kid}`,
    );
  try {
    const d = createDecipheriv("aes-256-gcm", k.key, Buffer.from(iv, "base64url"));
    d.setAAD(Buffer.from(aad, "utf8"));
    d.setAuthTag(Buffer.from(tag, "base64url"));
    return Buffer.concat([d.update(Buffer.from(ct, "base64url")), d.final()]).toString("utf8");
  } catch {
    throw new DomainError("FORGE.SECRET_UNREADABLE", "stored secret failed authentication");
  }
}
