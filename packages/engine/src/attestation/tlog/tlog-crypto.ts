// node:crypto bound to the domain's pure transparency-log code: SHA-256 for the Merkle tree and key
// hashes, Ed25519 for checkpoint signatures. Verifiers (the CLI's `verify` and `tlog monitor`, the
// attestor's re-check) use openCheckpoint with a pinned verifier key and nothing from the database.
import { createHash, createPrivateKey, createPublicKey, sign, verify, type KeyObject } from "node:crypto";
import { tlog } from "@kiln/domain";

export function sha256(data: Uint8Array): Uint8Array {
  return new Uint8Array(createHash("sha256").update(data).digest());
}

/** RFC 6962 hashing with SHA-256. */
export const tlogHasher: tlog.MerkleHasher = tlog.merkleHasher(sha256);

// The fixed DER prefixes of an Ed25519 SubjectPublicKeyInfo and PKCS#8 private key (RFC 8410):
// node:crypto takes raw 32-byte keys only through them.
const SPKI_PREFIX = Buffer.from("302a300506032b6570032100", "hex");
const PKCS8_PREFIX = Buffer.from("302e020100300506032b657004220420", "hex");

function ed25519PublicKey(raw: Uint8Array): KeyObject {
  if (raw.length !== 32) throw new RangeError("an Ed25519 public key is 32 bytes");
  return createPublicKey({ key: Buffer.concat([SPKI_PREFIX, raw]), format: "der", type: "spki" });
}

export function ed25519PrivateKey(seed: Uint8Array): KeyObject {
  if (seed.length !== 32) throw new RangeError("an Ed25519 private key (seed) is 32 bytes");
  return createPrivateKey({ key: Buffer.concat([PKCS8_PREFIX, seed]), format: "der", type: "pkcs8" });
}

/** Ed25519 verification (RFC 8032); false for any malformed key or signature, never a throw. */
export function ed25519Verify(publicKey: Uint8Array, message: Uint8Array, signature: Uint8Array): boolean {
  if (signature.length !== 64) return false;
  try {
    return verify(null, message, ed25519PublicKey(publicKey), signature);
  } catch {
    return false;
  }
}

export function ed25519Sign(seed: Uint8Array, message: Uint8Array): Uint8Array {
  return new Uint8Array(sign(null, message, ed25519PrivateKey(seed)));
}

/** A signed-note verifier for a `<name>+<hash>+<key>` verifier key, or why the key is unusable. */
export function noteVerifier(verifierKey: string): tlog.Parsed<tlog.NoteVerifier> {
  const k = tlog.parseVerifierKey(sha256, verifierKey.trim());
  if (!k.ok) return k;
  const { name, keyHash, publicKey } = k.value;
  return { ok: true, value: { name, keyHash, verify: (m, s) => ed25519Verify(publicKey, m, s) } };
}

export type OpenedCheckpoint =
  | { ok: true; checkpoint: tlog.Checkpoint; note: tlog.OpenedNote }
  | {
      ok: false;
      rule:
        | "TLOG.BAD_VERIFIER_KEY"
        | "TLOG.CHECKPOINT_SIGNATURE"
        | "TLOG.CHECKPOINT_MALFORMED"
        | "TLOG.CHECKPOINT_ORIGIN";
      reason: string;
    };

/**
 * Opens a checkpoint note: the signature of the pinned key must verify (witness cosignatures and
 * other unknown lines are ignored), the body must parse, and its origin must be the key's name.
 */
export function openCheckpoint(noteText: string, verifierKey: string): OpenedCheckpoint {
  const v = noteVerifier(verifierKey);
  if (!v.ok) return { ok: false, rule: "TLOG.BAD_VERIFIER_KEY", reason: v.reason };
  const opened = tlog.openSignedNote(noteText, [v.value]);
  if (!opened.ok) return { ok: false, rule: "TLOG.CHECKPOINT_SIGNATURE", reason: opened.reason };
  const c = tlog.parseCheckpoint(opened.value.body);
  if (!c.ok) return { ok: false, rule: "TLOG.CHECKPOINT_MALFORMED", reason: c.reason };
  if (c.checkpoint.origin !== v.value.name)
    return {
      ok: false,
      rule: "TLOG.CHECKPOINT_ORIGIN",
      reason: `origin ${c.checkpoint.origin} is not the key's ${v.value.name}`,
    };
  return { ok: true, checkpoint: c.checkpoint, note: opened.value };
}
