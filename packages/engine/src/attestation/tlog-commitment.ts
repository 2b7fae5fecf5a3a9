// What an attestation puts in the public transparency log (issue 28, ADR 0026 "Amended (issue 28)"):
// a commitment to the signed envelope, never the envelope. The log is public and append-only, and an
// envelope names private repos, clone URLs, org ids, branches, jobs and artifacts; a salted hash
// proves the statement was logged (binding: SHA-256 collision resistance) while telling a reader
// of the log nothing about it (hiding: a 32-byte random salt per entry, kept private and handed
// only to those allowed to read the envelope, in the bundle).
//
// Leaf bytes (what GET /v1/tlog/entries/{index} and the entry tiles serve):
//   "kiln.dev/tlog/dsse-commitment/v1\n" || base64(SHA-256(tag || 0x0A || salt || envelope)) || "\n"
// where envelope is the canonical JSON of the DSSE envelope (the bytes the attestation row keeps).
import { createHash, randomBytes } from "node:crypto";
import { toBase64, utf8 } from "@kiln/domain";

const COMMITMENT_TAG = "kiln.dev/tlog/dsse-commitment/v1";
/** The log entry kind of a commitment leaf; legacy entries (before issue 28) are kind "dsse". */
export const COMMITMENT_KIND = "dsse-commitment";
const LEGACY_ENVELOPE_KIND = "dsse";
export const SALT_BYTES = 32;
/**
 * Entry kinds whose bytes the public endpoints withhold (410 TLOG.ENTRY_WITHHELD): the envelopes
 * logged in full before issue 28. Their leaf hashes, proofs and hash tiles stay served.
 */
export const PUBLICLY_WITHHELD_KINDS: readonly string[] = [LEGACY_ENVELOPE_KIND];

export function newCommitmentSalt(): Uint8Array {
  return new Uint8Array(randomBytes(SALT_BYTES));
}

/** The leaf bytes committing to `envelope` under `salt`. */
export function commitmentLeaf(salt: Uint8Array, envelope: Uint8Array): Uint8Array {
  if (salt.length !== SALT_BYTES) throw new RangeError(`a commitment salt is ${SALT_BYTES} bytes`);
  const digest = createHash("sha256").update(`${COMMITMENT_TAG}\n`).update(salt).update(envelope).digest();
  return utf8(`${COMMITMENT_TAG}\n${toBase64(new Uint8Array(digest))}\n`);
}

/**
 * The leaf an attestation was logged under: the commitment when it has a salt, else (an entry
 * written before issue 28) the envelope bytes themselves.
 */
export function attestationLeaf(envelope: Uint8Array, salt: Uint8Array | null): Uint8Array {
  return salt ? commitmentLeaf(salt, envelope) : envelope;
}
