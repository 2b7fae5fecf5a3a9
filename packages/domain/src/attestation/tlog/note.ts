// C2SP signed notes (c2sp.org/signed-note): a text body, a blank line, then one line per signature,
// "— <key name> <base64(4-byte key hash || signature)>". Ed25519 keys (algorithm byte 0x01) carry
// the key hash SHA-256(name || "\n" || 0x01 || public key)[:4]; a verifier key is written
// "<name>+<hex key hash>+<base64(0x01 || public key)>". The signature itself is checked by a
// function the caller passes (the domain does no cryptography); parsing, key ids and the rules of
// which lines count are here.
import { concatBytes, fromBase64, fromHex, toBase64, toHex, utf8 } from "./bytes.ts";
import { bytesEqual, type Sha256 } from "./hash.ts";

export const ED25519_ALGORITHM = 0x01;
const EM_DASH = "\u2014";
const MAX_SIGNATURES = 100;

export interface NoteSignature {
  name: string;
  keyHash: Uint8Array;
  signature: Uint8Array;
}

/** A key that can check one name's signatures. */
export interface NoteVerifier {
  name: string;
  keyHash: Uint8Array;
  verify(message: Uint8Array, signature: Uint8Array): boolean;
}

export interface VerifierKey {
  name: string;
  keyHash: Uint8Array;
  algorithm: number;
  publicKey: Uint8Array;
}

export type Parsed<T> = { ok: true; value: T } | { ok: false; reason: string };

/** A key name: non-empty, no whitespace, no '+' (the verifier key's separator). */
export function validKeyName(name: string): boolean {
  return name.length > 0 && !/[\s+]/u.test(name) && !/\p{Cc}/u.test(name);
}

export function noteKeyHash(sha256: Sha256, name: string, algorithm: number, publicKey: Uint8Array): Uint8Array {
  return sha256(concatBytes(utf8.encode(name), new Uint8Array([0x0a, algorithm]), publicKey)).slice(0, 4);
}

export function formatVerifierKey(sha256: Sha256, name: string, ed25519PublicKey: Uint8Array): string {
  if (!validKeyName(name)) throw new RangeError("key name may not be empty or contain spaces or '+'");
  const hash = noteKeyHash(sha256, name, ED25519_ALGORITHM, ed25519PublicKey);
  return `${name}+${toHex(hash)}+${toBase64(concatBytes(new Uint8Array([ED25519_ALGORITHM]), ed25519PublicKey))}`;
}

/** Parses a verifier key and checks that its key hash is the one its name and key give. */
export function parseVerifierKey(sha256: Sha256, text: string): Parsed<VerifierKey> {
  // Split at the first two '+' only: the base64 key may contain '+' itself (Go's note does the same).
  const a = text.indexOf("+");
  const b = a < 0 ? -1 : text.indexOf("+", a + 1);
  if (b < 0) return { ok: false, reason: "verifier key must be <name>+<hash>+<key>" };
  const [name, hashHex, keyB64] = [text.slice(0, a), text.slice(a + 1, b), text.slice(b + 1)];
  if (!validKeyName(name)) return { ok: false, reason: "bad key name" };
  const keyHash = hashHex.length === 8 ? fromHex(hashHex) : null;
  if (!keyHash) return { ok: false, reason: "key hash must be 8 hex digits" };
  const key = fromBase64(keyB64);
  if (!key || key.length < 2) return { ok: false, reason: "key is not base64" };
  const algorithm = key[0] as number;
  const publicKey = key.slice(1);
  if (algorithm !== ED25519_ALGORITHM || publicKey.length !== 32)
    return { ok: false, reason: "only Ed25519 (algorithm 0x01, 32-byte keys) is supported" };
  if (!bytesEqual(noteKeyHash(sha256, name, algorithm, publicKey), keyHash))
    return { ok: false, reason: "key hash does not match the name and key" };
  return { ok: true, value: { name, keyHash, algorithm, publicKey } };
}

/** The signature line a key named `name` with `keyHash` writes for `signature`. */
export function formatSignatureLine(s: NoteSignature): string {
  return `${EM_DASH} ${s.name} ${toBase64(concatBytes(s.keyHash, s.signature))}\n`;
}

/** body (ending in a newline) + blank line + signature lines. */
export function formatSignedNote(body: string, signatures: NoteSignature[]): string {
  if (!body.endsWith("\n")) throw new RangeError("note body must end with a newline");
  return `${body}\n${signatures.map(formatSignatureLine).join("")}`;
}

/** Splits a note into body and signatures; every signature line must be well formed. */
export function parseSignedNote(text: string): Parsed<{ body: string; signatures: NoteSignature[] }> {
  // Control characters other than newline are refused: they would let two readers see two texts.
  for (const ch of text) {
    const c = ch.codePointAt(0) ?? 0;
    if ((c < 0x20 && c !== 0x0a) || (c >= 0x7f && c <= 0x9f))
      return { ok: false, reason: "note contains control characters" };
  }
  const split = text.lastIndexOf("\n\n");
  if (split < 0) return { ok: false, reason: "note has no signature block" };
  const body = text.slice(0, split + 1);
  const block = text.slice(split + 2);
  if (block.length === 0 || !block.endsWith("\n")) return { ok: false, reason: "note has no signatures" };
  const lines = block.slice(0, -1).split("\n");
  if (lines.length > MAX_SIGNATURES) return { ok: false, reason: "too many signatures" };
  const signatures: NoteSignature[] = [];
  for (const line of lines) {
    const m = /^\u2014 (\S+) (\S+)$/u.exec(line);
    const raw = m ? fromBase64(m[2] as string) : null;
    if (!m || !validKeyName(m[1] as string) || !raw || raw.length < 5)
      return { ok: false, reason: "malformed signature line" };
    signatures.push({ name: m[1] as string, keyHash: raw.slice(0, 4), signature: raw.slice(4) });
  }
  return { ok: true, value: { body, signatures } };
}

export interface OpenedNote {
  body: string;
  /** Names of the known keys whose signatures verified. */
  verifiedBy: string[];
  /** Lines from keys this reader does not know (witness cosignatures, other algorithms): ignored. */
  unknownSignatures: number;
}

/**
 * Opens a note the way Go's sumdb/note Open does: lines from unknown keys are ignored, a line from a
 * known key that fails to verify rejects the note, and at least one known key must have signed.
 */
export function openSignedNote(text: string, verifiers: NoteVerifier[]): Parsed<OpenedNote> {
  const parsed = parseSignedNote(text);
  if (!parsed.ok) return parsed;
  const { body, signatures } = parsed.value;
  const message = utf8.encode(body);
  const verifiedBy: string[] = [];
  let unknownSignatures = 0;
  for (const s of signatures) {
    const v = verifiers.find((k) => k.name === s.name && bytesEqual(k.keyHash, s.keyHash));
    if (!v) {
      unknownSignatures++;
      continue;
    }
    if (!v.verify(message, s.signature)) return { ok: false, reason: `invalid signature from ${s.name}` };
    if (!verifiedBy.includes(v.name)) verifiedBy.push(v.name);
  }
  if (verifiedBy.length === 0) return { ok: false, reason: "no signature from a known key" };
  return { ok: true, value: { body, verifiedBy, unknownSignatures } };
}
