// The chunked AES-256-GCM framing of crypto-shredded objects (issue 21, docs/adr/0037): pure
// layout and nonce logic; the cipher itself runs in the engine and the host agent (node:crypto).
//
// object  = header || chunk_0 || ... || chunk_{n-1}
// header  = "KLNS" | version u8 (1) | 3 zero bytes | chunk_size u32 BE | key_id 16 bytes (uuid)
//           | object_salt 8 bytes                                                   (36 bytes)
// chunk_i = AES-256-GCM(data_key, nonce_i, plaintext_i, aad_i) ciphertext || 16-byte tag
// nonce_i = object_salt || i u32 BE                                                  (12 bytes)
// aad_i   = header || i u32 BE || final u8 (1 on the last chunk only)
//
// Every plaintext chunk is chunk_size bytes except the last (1..chunk_size bytes; an empty object
// is one empty final chunk), so a plaintext range maps to a ciphertext range by arithmetic alone.
// The index in nonce and AAD detects reordering; the final flag detects truncation at a chunk
// boundary and extension; the header in the AAD binds chunk size, key and object, so a chunk spliced
// from another object (another salt) or a header edited to another key does not authenticate.
import { DomainError } from "../shared/errors.ts";

export const SHRED_MAGIC = [0x4b, 0x4c, 0x4e, 0x53] as const; // "KLNS"
export const SHRED_VERSION = 1;
export const SHRED_HEADER_BYTES = 36;
export const SHRED_TAG_BYTES = 16;
export const SHRED_SALT_BYTES = 8;
export const SHRED_DEFAULT_CHUNK_BYTES = 64 * 1024;
/** GCM's counter block leaves 2^32 - 2 blocks per nonce; 16 MiB keeps far below it and bounds memory. */
export const SHRED_MAX_CHUNK_BYTES = 16 * 1024 * 1024;
const MAX_CHUNKS = 0xffff_ffff;

/** True when stored bytes begin like a shredded object (plain gzip segments begin 1f 8b). */
export function isShreddedObject(b: Uint8Array): boolean {
  return b.length >= 4 && SHRED_MAGIC.every((m, i) => b[i] === m);
}

export interface ShredHeader {
  version: number;
  chunkSize: number;
  /** The data key's id (a uuid): which wrapped key opens this object. */
  keyId: string;
  objectSalt: Uint8Array;
}

function uuidBytes(id: string): Uint8Array {
  const hex = id.replace(/-/g, "");
  if (!/^[0-9a-f]{32}$/i.test(hex)) throw new DomainError("SHRED.BAD_FORMAT", `key id ${id} is not a uuid`);
  const out = new Uint8Array(16);
  for (let i = 0; i < 16; i++) out[i] = Number.parseInt(hex.slice(i * 2, i * 2 + 2), 16);
  return out;
}

function uuidString(b: Uint8Array): string {
  const hex = Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

function checkChunkSize(n: number): void {
  if (!Number.isInteger(n) || n < 1 || n > SHRED_MAX_CHUNK_BYTES)
    throw new DomainError("SHRED.BAD_FORMAT", `chunk size ${n} is outside 1..${SHRED_MAX_CHUNK_BYTES}`);
}

export function encodeShredHeader(h: { chunkSize: number; keyId: string; objectSalt: Uint8Array }): Uint8Array {
  checkChunkSize(h.chunkSize);
  if (h.objectSalt.length !== SHRED_SALT_BYTES)
    throw new DomainError("SHRED.BAD_FORMAT", `the object salt must be ${SHRED_SALT_BYTES} bytes`);
  const out = new Uint8Array(SHRED_HEADER_BYTES);
  out.set(SHRED_MAGIC, 0);
  out[4] = SHRED_VERSION;
  new DataView(out.buffer).setUint32(8, h.chunkSize, false);
  out.set(uuidBytes(h.keyId), 12);
  out.set(h.objectSalt, 28);
  return out;
}

export function parseShredHeader(b: Uint8Array): ShredHeader {
  if (b.length < SHRED_HEADER_BYTES) throw new DomainError("SHRED.BAD_FORMAT", "shorter than the header");
  if (SHRED_MAGIC.some((m, i) => b[i] !== m)) throw new DomainError("SHRED.BAD_FORMAT", "not a shredded object");
  if (b[4] !== SHRED_VERSION) throw new DomainError("SHRED.BAD_FORMAT", `unknown framing version ${b[4]}`);
  if (b[5] !== 0 || b[6] !== 0 || b[7] !== 0) throw new DomainError("SHRED.BAD_FORMAT", "reserved bytes are set");
  const chunkSize = new DataView(b.buffer, b.byteOffset, SHRED_HEADER_BYTES).getUint32(8, false);
  checkChunkSize(chunkSize);
  return { version: 1, chunkSize, keyId: uuidString(b.subarray(12, 28)), objectSalt: b.slice(28, 36) };
}

export function chunkNonce(objectSalt: Uint8Array, index: number): Uint8Array {
  if (!Number.isInteger(index) || index < 0 || index > MAX_CHUNKS)
    throw new DomainError("SHRED.BAD_FORMAT", `chunk index ${index} out of range`);
  const out = new Uint8Array(12);
  out.set(objectSalt, 0);
  new DataView(out.buffer).setUint32(8, index, false);
  return out;
}

export function chunkAad(header: Uint8Array, index: number, final: boolean): Uint8Array {
  const out = new Uint8Array(SHRED_HEADER_BYTES + 5);
  out.set(header.subarray(0, SHRED_HEADER_BYTES), 0);
  new DataView(out.buffer).setUint32(SHRED_HEADER_BYTES, index, false);
  out[SHRED_HEADER_BYTES + 4] = final ? 1 : 0;
  return out;
}

/** Chunks a plaintext of this size is cut into (an empty plaintext is one empty final chunk). */
export function chunkCount(plainSize: number, chunkSize: number): number {
  return Math.max(1, Math.ceil(plainSize / chunkSize));
}

export function sealedSize(plainSize: number, chunkSize: number): number {
  return SHRED_HEADER_BYTES + plainSize + chunkCount(plainSize, chunkSize) * SHRED_TAG_BYTES;
}

/** The plaintext size a sealed object of this size holds; null when no plaintext seals to it. */
export function plainSizeOf(sealed: number, chunkSize: number): number | null {
  const body = sealed - SHRED_HEADER_BYTES;
  if (body < SHRED_TAG_BYTES) return null;
  const full = Math.floor(body / (chunkSize + SHRED_TAG_BYTES));
  const rest = body - full * (chunkSize + SHRED_TAG_BYTES);
  if (rest === 0) return full * chunkSize; // ends on a full chunk
  if (rest < SHRED_TAG_BYTES || (rest === SHRED_TAG_BYTES && full > 0)) return null; // a lone tag only for empty
  return full * chunkSize + rest - SHRED_TAG_BYTES;
}

export interface CipherRange {
  firstChunk: number;
  lastChunk: number;
  /** Byte offsets in the sealed object, end exclusive (the header is read separately). */
  cipherStart: number;
  cipherEnd: number;
  /** Plaintext bytes to drop from the first decrypted chunk, and how many to keep in all. */
  skip: number;
  length: number;
}

/** Which sealed bytes hold plaintext [start, end) of an object of plainSize bytes. */
export function cipherRangeFor(plainSize: number, chunkSize: number, start: number, end: number): CipherRange {
  checkChunkSize(chunkSize);
  if (!Number.isInteger(start) || !Number.isInteger(end) || start < 0 || end > plainSize || start >= end)
    throw new DomainError("SHRED.BAD_FORMAT", `range [${start}, ${end}) is not inside 0..${plainSize}`);
  const firstChunk = Math.floor(start / chunkSize);
  const lastChunk = Math.floor((end - 1) / chunkSize);
  const stride = chunkSize + SHRED_TAG_BYTES;
  const cipherStart = SHRED_HEADER_BYTES + firstChunk * stride;
  const lastPlain = Math.min(chunkSize, plainSize - lastChunk * chunkSize);
  const cipherEnd = SHRED_HEADER_BYTES + lastChunk * stride + lastPlain + SHRED_TAG_BYTES;
  return { firstChunk, lastChunk, cipherStart, cipherEnd, skip: start - firstChunk * chunkSize, length: end - start };
}
