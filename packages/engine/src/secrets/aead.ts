// AES-GCM with a 12-byte nonce and a 16-byte tag, sealed as nonce || ciphertext || tag (ADR 0025).
// That layout is what every standard library can be fed directly (python's AESGCM.decrypt takes
// ciphertext||tag; Go's cipher.AEAD.Open too), so a third party needs no Kiln code to decrypt.
import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";

const GCM_NONCE_BYTES = 12;
const GCM_TAG_BYTES = 16;

function algorithm(key: Uint8Array): "aes-128-gcm" | "aes-192-gcm" | "aes-256-gcm" {
  if (key.length === 16) return "aes-128-gcm";
  if (key.length === 24) return "aes-192-gcm";
  if (key.length === 32) return "aes-256-gcm";
  throw new Error(`AES-GCM key must be 16, 24 or 32 bytes (got ${key.length})`);
}

/** Raw AES-GCM encryption with an explicit nonce: ciphertext and tag apart (for test vectors). */
export function gcmEncrypt(
  key: Uint8Array,
  nonce: Uint8Array,
  plaintext: Uint8Array,
  aad: Uint8Array,
): { ciphertext: Buffer; tag: Buffer } {
  if (nonce.length !== GCM_NONCE_BYTES) throw new Error(`nonce must be ${GCM_NONCE_BYTES} bytes`);
  const c = createCipheriv(algorithm(key), key, nonce, { authTagLength: GCM_TAG_BYTES });
  c.setAAD(aad);
  const ciphertext = Buffer.concat([c.update(plaintext), c.final()]);
  return { ciphertext, tag: c.getAuthTag() };
}

/** Raw AES-GCM decryption; null when the tag does not verify (never partial plaintext). */
export function gcmDecrypt(
  key: Uint8Array,
  nonce: Uint8Array,
  ciphertext: Uint8Array,
  tag: Uint8Array,
  aad: Uint8Array,
): Buffer | null {
  // Node would accept shorter tags (and other nonce sizes): this layout admits exactly one shape.
  if (nonce.length !== GCM_NONCE_BYTES || tag.length !== GCM_TAG_BYTES) return null;
  const d = createDecipheriv(algorithm(key), key, nonce, { authTagLength: GCM_TAG_BYTES });
  d.setAAD(aad);
  d.setAuthTag(tag);
  const out = d.update(ciphertext);
  try {
    return Buffer.concat([out, d.final()]);
  } catch {
    out.fill(0);
    return null;
  }
}

/** Encrypts under a fresh random nonce; returns nonce || ciphertext || tag. */
export function gcmSeal(key: Uint8Array, plaintext: Uint8Array, aad: string): Buffer {
  const nonce = randomBytes(GCM_NONCE_BYTES);
  const { ciphertext, tag } = gcmEncrypt(key, nonce, plaintext, Buffer.from(aad, "utf8"));
  return Buffer.concat([nonce, ciphertext, tag]);
}

/** Opens nonce || ciphertext || tag; null when it is too short or does not authenticate. */
export function gcmOpen(key: Uint8Array, sealed: Uint8Array, aad: string): Buffer | null {
  if (sealed.length < GCM_NONCE_BYTES + GCM_TAG_BYTES) return null;
  const nonce = sealed.subarray(0, GCM_NONCE_BYTES);
  const ciphertext = sealed.subarray(GCM_NONCE_BYTES, sealed.length - GCM_TAG_BYTES);
  const tag = sealed.subarray(sealed.length - GCM_TAG_BYTES);
  return gcmDecrypt(key, nonce, ciphertext, tag, Buffer.from(aad, "utf8"));
}
