// The log's Ed25519 key (docs/adr/0026): generated on first use by whichever worker signs first, its
// private half sealed with AES-256-GCM under a key-encryption key (KEK) that only the workers hold,
// so a database dump or backup does not carry a usable log key. The web app reads the public half
// only. One key per log: the key's name is the log's origin, and changing either makes a new log.
import { createCipheriv, createDecipheriv, generateKeyPairSync, randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { Db, DbOrTx } from "@kiln/db";
import { DomainError, tlog } from "@kiln/domain";
import { ed25519PrivateKey, ed25519Sign, sha256 } from "./tlog-crypto.ts";

export interface LogSigner {
  origin: string;
  keyHash: Uint8Array;
  publicKey: Uint8Array;
  sign(message: Uint8Array): Uint8Array;
}

const KEK_BYTES = 32;

/**
 * The log's origin: KILN_TLOG_ORIGIN, else `<host of KILN_PUBLIC_URL>/tlog` (schema-less, as C2SP
 * origins are), else `localhost/tlog` for a local platform.
 */
export function tlogOrigin(opts: { origin?: string | undefined; publicUrl?: string | undefined }): string {
  if (opts.origin) return opts.origin;
  return `${opts.publicUrl ? new URL(opts.publicUrl).host : "localhost"}/tlog`;
}

/** Names a KEK without revealing it, so a worker with the wrong one says so instead of failing to decrypt. */
export function kekId(kek: Uint8Array): string {
  return tlog.toHex(sha256(tlog.concatBytes(new TextEncoder().encode("kiln tlog kek\n"), kek))).slice(0, 16);
}

/**
 * The KEK: KILN_TLOG_KEY_ENCRYPTION_KEY (base64 of 32 bytes) when set, else a key file created once
 * with mode 0600 (`<KILN_DATA_DIR>/keys/tlog-kek`). Several worker hosts must share one value.
 */
export function loadKeyEncryptionKey(opts: { base64?: string | undefined; file: string }): Uint8Array {
  if (opts.base64) {
    const k = tlog.fromBase64(opts.base64.trim());
    if (!k || k.length !== KEK_BYTES) throw new Error("KILN_TLOG_KEY_ENCRYPTION_KEY must be base64 of 32 bytes");
    return k;
  }
  mkdirSync(path.dirname(opts.file), { recursive: true, mode: 0o700 });
  try {
    // "wx": two workers starting at once cannot both create (and then disagree about) the key.
    writeFileSync(opts.file, randomBytes(KEK_BYTES).toString("base64"), { flag: "wx", mode: 0o600 });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
  }
  return loadKeyEncryptionKey({ base64: readFileSync(opts.file, "utf8"), file: opts.file });
}

function aad(keyHashHex: string): Buffer {
  return Buffer.from(`kiln tlog key ${keyHashHex}`);
}

function seal(kek: Uint8Array, keyHashHex: string, seed: Uint8Array): Buffer {
  const iv = randomBytes(12);
  const c = createCipheriv("aes-256-gcm", kek, iv).setAAD(aad(keyHashHex));
  const body = Buffer.concat([c.update(seed), c.final()]);
  return Buffer.concat([iv, body, c.getAuthTag()]);
}

function unseal(kek: Uint8Array, keyHashHex: string, sealed: Uint8Array): Uint8Array {
  const b = Buffer.from(sealed);
  const d = createDecipheriv("aes-256-gcm", kek, b.subarray(0, 12)).setAAD(aad(keyHashHex));
  d.setAuthTag(b.subarray(b.length - 16));
  return new Uint8Array(Buffer.concat([d.update(b.subarray(12, b.length - 16)), d.final()]));
}

function newSeed(): Uint8Array {
  const der = generateKeyPairSync("ed25519").privateKey.export({ format: "der", type: "pkcs8" });
  return new Uint8Array(der.subarray(der.length - 32));
}

function ed25519PublicFromPrivate(seed: Uint8Array): Uint8Array {
  const jwk = ed25519PrivateKey(seed).export({ format: "jwk" });
  return new Uint8Array(Buffer.from(jwk.x as string, "base64url"));
}

interface KeyRow {
  key_hash: string;
  origin: string;
  public_key: Uint8Array;
  sealed_private_key: Uint8Array;
  kek_id: string;
}

async function readKey(db: DbOrTx): Promise<KeyRow | null> {
  const rows = await db.$queryRaw<KeyRow[]>`
    SELECT key_hash, origin, public_key, sealed_private_key, kek_id FROM tlog_key`;
  return rows[0] ?? null;
}

const signers = new WeakMap<Db, LogSigner>();

/**
 * The log's signer, generating and storing the key on first use (the first writer wins a unique
 * index; everyone then reads the same row). Refuses a configured origin that is not the stored
 * key's name and a KEK that did not seal it.
 */
export async function logSigner(db: Db, opts: { origin: string; kek: Uint8Array }): Promise<LogSigner> {
  const cached = signers.get(db);
  if (cached && cached.origin === opts.origin) return cached;
  if (!tlog.validKeyName(opts.origin))
    throw new DomainError("TLOG.KEY_UNAVAILABLE", "the log origin may not be empty or contain spaces or '+'");
  let row = await readKey(db);
  if (!row) {
    const seed = newSeed();
    const pub = ed25519PublicFromPrivate(seed);
    const hashHex = tlog.toHex(tlog.noteKeyHash(sha256, opts.origin, tlog.ED25519_ALGORITHM, pub));
    await db.$executeRaw`
      INSERT INTO tlog_key (key_hash, origin, public_key, sealed_private_key, kek_id)
      VALUES (${hashHex}, ${opts.origin}, ${Buffer.from(pub)}, ${seal(opts.kek, hashHex, seed)}, ${kekId(opts.kek)})
      ON CONFLICT DO NOTHING`;
    row = await readKey(db);
    if (!row) throw new Error("tlog key missing after insert");
  }
  if (row.origin !== opts.origin)
    throw new DomainError(
      "TLOG.ORIGIN_CHANGED",
      `the log's key is named ${row.origin} but the configured origin is ${opts.origin}; a log's origin never changes`,
    );
  if (row.kek_id !== kekId(opts.kek))
    throw new DomainError("TLOG.KEY_UNAVAILABLE", `the log key was sealed under KEK ${row.kek_id}, not this one`);
  const seed = unseal(opts.kek, row.key_hash, row.sealed_private_key);
  const publicKey = new Uint8Array(row.public_key);
  if (!tlog.bytesEqual(ed25519PublicFromPrivate(seed), publicKey))
    throw new Error("the unsealed log key does not match its public key");
  const signer: LogSigner = {
    origin: row.origin,
    keyHash: tlog.fromHex(row.key_hash) as Uint8Array,
    publicKey,
    sign: (m) => ed25519Sign(seed, m),
  };
  signers.set(db, signer);
  return signer;
}

/** `<origin>+<hex key hash>+<base64(0x01 || public key)>`, or null before the first checkpoint. */
export async function logVerifierKey(db: DbOrTx): Promise<string | null> {
  const rows = await db.$queryRaw<
    { origin: string; public_key: Uint8Array }[]
  >`SELECT origin, public_key FROM tlog_key`;
  const r = rows[0];
  return r ? tlog.formatVerifierKey(sha256, r.origin, new Uint8Array(r.public_key)) : null;
}
