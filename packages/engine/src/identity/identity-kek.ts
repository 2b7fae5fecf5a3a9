// The identity key-encryption key (ADR 0024): 32 random bytes, base64 in a file, that seal the ID
// token signing keys' private halves at rest. Its id is the first 8 hex characters of the SHA-256
// of the 32 bytes (the secrets KEK of issue 16 uses the same file format), so a sealed key names
// the KEK that opens it and a wrong KEK is told apart from a corrupted row.
import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto";
import { link, mkdir, readFile, rm, writeFile } from "node:fs/promises";
import path from "node:path";

export interface IdentityKek {
  id: string;
  key: Buffer;
}

const NONCE_BYTES = 12;
const TAG_BYTES = 16;

export function kekFromBytes(key: Buffer): IdentityKek {
  if (key.length !== 32) throw new Error(`identity KEK must be 32 bytes, got ${key.length}`);
  return { id: createHash("sha256").update(key).digest("hex").slice(0, 8), key };
}

/** Reads the KEK file (base64 of 32 bytes, surrounding whitespace ignored). */
export async function readIdentityKek(file: string): Promise<IdentityKek> {
  const text = (await readFile(file, "utf8")).trim();
  return kekFromBytes(Buffer.from(text, "base64"));
}

/**
 * Reads the KEK file, creating it (mode 0600) when it does not exist. Written to a temporary name
 * and hard-linked into place, so two processes starting at once end with one KEK and neither can
 * read a half-written file: the loser of the link() reads the winner's.
 */
export async function loadOrCreateIdentityKek(file: string): Promise<IdentityKek> {
  try {
    return await readIdentityKek(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
  }
  await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  const tmp = `${file}.${process.pid}.${randomBytes(4).toString("hex")}`;
  await writeFile(tmp, `${randomBytes(32).toString("base64")}\n`, { mode: 0o600, flag: "wx" });
  try {
    await link(tmp, file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
  } finally {
    await rm(tmp, { force: true });
  }
  return readIdentityKek(file);
}

// The AAD binds a sealed key to its purpose, its kid and the KEK id: a row copied to another kid,
// or between the ID-token and job-token tables, does not open.
function aad(purpose: "id-token-key" | "job-token-key", kid: string, kekId: string): Buffer {
  return Buffer.from(`kiln-${purpose}:v1:${kid}:${kekId}`, "utf8");
}

/** AES-256-GCM, fresh 12-byte nonce; stored as nonce || ciphertext || 16-byte tag. */
function seal(kek: IdentityKek, ad: Buffer, plain: Buffer): Buffer {
  const nonce = randomBytes(NONCE_BYTES);
  const c = createCipheriv("aes-256-gcm", kek.key, nonce, { authTagLength: TAG_BYTES });
  c.setAAD(ad);
  const body = Buffer.concat([c.update(plain), c.final()]);
  return Buffer.concat([nonce, body, c.getAuthTag()]);
}

/** Throws on a wrong KEK, another kid's row, or any flipped byte (the tag covers all of them). */
function open(kek: IdentityKek, ad: Buffer, sealed: Buffer): Buffer {
  if (sealed.length < NONCE_BYTES + TAG_BYTES + 1) throw new Error("sealed key too short");
  const nonce = sealed.subarray(0, NONCE_BYTES);
  const tag = sealed.subarray(sealed.length - TAG_BYTES);
  const d = createDecipheriv("aes-256-gcm", kek.key, nonce, { authTagLength: TAG_BYTES });
  d.setAAD(ad);
  d.setAuthTag(tag);
  return Buffer.concat([d.update(sealed.subarray(NONCE_BYTES, sealed.length - TAG_BYTES)), d.final()]);
}

/** An ID-token signing key's private half (PKCS#8 DER), sealed for id_token_key. */
export function sealPrivateKey(kek: IdentityKek, kid: string, pkcs8Der: Buffer): Buffer {
  return seal(kek, aad("id-token-key", kid, kek.id), pkcs8Der);
}

export function openPrivateKey(kek: IdentityKek, kid: string, sealed: Buffer): Buffer {
  return open(kek, aad("id-token-key", kid, kek.id), sealed);
}

/** A job-token HMAC key (issue 28, ADR 0018 "Amended (issue 28)"), sealed for job_token_key. */
export function sealJobTokenSecret(kek: IdentityKek, kid: string, secret: Buffer): Buffer {
  return seal(kek, aad("job-token-key", kid, kek.id), secret);
}

export function openJobTokenSecret(kek: IdentityKek, kid: string, sealed: Buffer): Buffer {
  return open(kek, aad("job-token-key", kid, kek.id), sealed);
}
