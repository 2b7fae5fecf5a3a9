// The cipher half of the shred framing (docs/adr/0037; layout in @kiln/domain chunk-framing.ts).
// No database, no env: its own package (@kiln/chunk-cipher), so the host agent seals artifacts before
// upload and opens them on restore without importing the engine.
import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import { Transform, type TransformCallback } from "node:stream";
import {
  chunkAad,
  chunkNonce,
  cipherRangeFor,
  DomainError,
  encodeShredHeader,
  parseShredHeader,
  SHRED_DEFAULT_CHUNK_BYTES,
  SHRED_HEADER_BYTES,
  SHRED_SALT_BYTES,
  SHRED_TAG_BYTES,
  type ShredHeader,
} from "@kiln/domain";

export interface DataKey {
  id: string;
  key: Buffer;
}

function checkKey(k: DataKey): void {
  if (k.key.length !== 32) throw new DomainError("SHRED.KEY_UNAVAILABLE", "a data key is 32 bytes");
}

/** A fresh header for one object (its random salt keeps nonces unique under a shared data key). */
function newHeader(k: DataKey, chunkSize = SHRED_DEFAULT_CHUNK_BYTES, salt?: Uint8Array): Buffer {
  checkKey(k);
  // `salt` is for known-answer tests; production objects always draw a fresh one.
  const objectSalt = salt ?? randomBytes(SHRED_SALT_BYTES);
  return Buffer.from(encodeShredHeader({ chunkSize, keyId: k.id, objectSalt }));
}

function sealChunk(
  key: Buffer,
  header: Uint8Array,
  salt: Uint8Array,
  index: number,
  final: boolean,
  plain: Uint8Array,
): Buffer {
  const [body, tag] = sealChunkParts(key, header, salt, index, final, plain);
  return Buffer.concat([body, tag]);
}

/** The sealed chunk as ciphertext and tag, so a stream pushes both without copying them together. */
function sealChunkParts(
  key: Buffer,
  header: Uint8Array,
  salt: Uint8Array,
  index: number,
  final: boolean,
  plain: Uint8Array,
): [Buffer, Buffer] {
  const c = createCipheriv("aes-256-gcm", key, chunkNonce(salt, index), { authTagLength: SHRED_TAG_BYTES });
  c.setAAD(chunkAad(header, index, final));
  const body = c.update(plain);
  c.final(); // GCM emits nothing here; it computes the tag
  return [body, c.getAuthTag()];
}

/** Opens one sealed chunk; throws SHRED.DECRYPT_FAILED and never hands out unauthenticated bytes. */
function openChunk(
  key: Buffer,
  header: Uint8Array,
  salt: Uint8Array,
  index: number,
  final: boolean,
  sealed: Uint8Array,
): Buffer {
  if (sealed.length < SHRED_TAG_BYTES) throw new DomainError("SHRED.DECRYPT_FAILED", `chunk ${index} is truncated`);
  const d = createDecipheriv("aes-256-gcm", key, chunkNonce(salt, index), { authTagLength: SHRED_TAG_BYTES });
  d.setAAD(chunkAad(header, index, final));
  d.setAuthTag(sealed.subarray(sealed.length - SHRED_TAG_BYTES));
  const out = d.update(sealed.subarray(0, sealed.length - SHRED_TAG_BYTES));
  try {
    d.final(); // verifies the tag; GCM emits no further bytes
    return out;
  } catch {
    out.fill(0);
    throw new DomainError(
      "SHRED.DECRYPT_FAILED",
      `chunk ${index} does not authenticate (wrong key, reordered, truncated or altered)`,
    );
  }
}

/** Seals a whole buffer (log segments: small, already in memory). */
export function sealBuffer(
  k: DataKey,
  plain: Uint8Array,
  chunkSize = SHRED_DEFAULT_CHUNK_BYTES,
  fixedSalt?: Uint8Array,
): Buffer {
  const header = newHeader(k, chunkSize, fixedSalt);
  const salt = header.subarray(28, 36);
  const parts: Buffer[] = [header];
  const n = Math.max(1, Math.ceil(plain.length / chunkSize));
  for (let i = 0; i < n; i++)
    parts.push(sealChunk(k.key, header, salt, i, i === n - 1, plain.subarray(i * chunkSize, (i + 1) * chunkSize)));
  return Buffer.concat(parts);
}

/** Opens a whole sealed buffer: every chunk in order, the last flagged final, nothing after it. */
export function openBuffer(k: DataKey, sealed: Uint8Array): Buffer {
  const h = parseShredHeader(sealed);
  if (h.keyId !== k.id) throw new DomainError("SHRED.DECRYPT_FAILED", `sealed under key ${h.keyId}, not ${k.id}`);
  const header = sealed.subarray(0, SHRED_HEADER_BYTES);
  const stride = h.chunkSize + SHRED_TAG_BYTES;
  const out: Buffer[] = [];
  for (let i = 0, pos = SHRED_HEADER_BYTES; ; i++, pos += stride) {
    const final = sealed.length - pos <= stride;
    out.push(
      openChunk(k.key, header, h.objectSalt, i, final, sealed.subarray(pos, Math.min(sealed.length, pos + stride))),
    );
    if (final) return Buffer.concat(out);
  }
}

/**
 * Opens plaintext [start, end) from the sealed bytes cipherRangeFor named (`body` starts at
 * range.cipherStart). Only the touched chunks are fetched and authenticated.
 */
export function openRange(
  k: DataKey,
  header: Uint8Array,
  plainSize: number,
  start: number,
  end: number,
  body: Uint8Array,
): Buffer {
  const h = parseShredHeader(header);
  const r = cipherRangeFor(plainSize, h.chunkSize, start, end);
  if (body.length !== r.cipherEnd - r.cipherStart)
    throw new DomainError(
      "SHRED.DECRYPT_FAILED",
      `range body is ${body.length} bytes, expected ${r.cipherEnd - r.cipherStart}`,
    );
  const lastIndex = Math.max(1, Math.ceil(plainSize / h.chunkSize)) - 1;
  const stride = h.chunkSize + SHRED_TAG_BYTES;
  const out: Buffer[] = [];
  for (let i = r.firstChunk, pos = 0; i <= r.lastChunk; i++, pos += stride)
    out.push(
      openChunk(
        k.key,
        header.subarray(0, SHRED_HEADER_BYTES),
        h.objectSalt,
        i,
        i === lastIndex,
        body.subarray(pos, Math.min(body.length, pos + stride)),
      ),
    );
  return Buffer.concat(out).subarray(r.skip, r.skip + r.length);
}

/**
 * Cuts a byte stream into units of `unit` bytes with one unit of look-ahead: a unit is handed on
 * only once a byte after it has arrived, so whoever holds the last one knows it is the last. Input
 * buffers are sliced, not copied, except a unit that straddles two of them.
 */
class UnitCutter {
  private pending: Buffer[] = [];
  private pendingBytes = 0;

  constructor(private readonly unit: number) {}

  feed(data: Buffer, each: (u: Buffer) => void): void {
    let off = 0;
    if (this.pendingBytes > 0) {
      const take = Math.min(this.unit - this.pendingBytes, data.length);
      this.pending.push(data.subarray(0, take));
      this.pendingBytes += take;
      off = take;
      if (off === data.length) return; // a full pending unit waits for a byte after it
      each(this.take());
    }
    for (; data.length - off > this.unit; off += this.unit) each(data.subarray(off, off + this.unit));
    if (off < data.length) {
      this.pending = [data.subarray(off)];
      this.pendingBytes = data.length - off;
    }
  }

  /** What is held (the last unit at the end of the stream). */
  take(): Buffer {
    const u = this.pending.length === 1 ? (this.pending[0] as Buffer) : Buffer.concat(this.pending);
    this.pending = [];
    this.pendingBytes = 0;
    return u;
  }
}

/** Streams plaintext in, sealed object out. One chunk is held back: only the end says it is final. */
export class SealStream extends Transform {
  private readonly header: Buffer;
  private readonly salt: Buffer;
  private readonly cutter: UnitCutter;
  private index = 0;

  constructor(
    private readonly k: DataKey,
    chunkSize = SHRED_DEFAULT_CHUNK_BYTES,
  ) {
    super();
    this.header = newHeader(k, chunkSize);
    this.salt = this.header.subarray(28, 36);
    this.cutter = new UnitCutter(chunkSize);
    this.push(this.header);
  }

  private seal(plain: Buffer, final: boolean): void {
    const [body, tag] = sealChunkParts(this.k.key, this.header, this.salt, this.index++, final, plain);
    this.push(body);
    this.push(tag);
  }

  override _transform(data: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    this.cutter.feed(data, (u) => this.seal(u, false));
    done();
  }

  override _flush(done: TransformCallback): void {
    this.seal(this.cutter.take(), true);
    done();
  }
}

/** Streams a sealed object in, plaintext out; an object cut short (no final chunk) is an error. */
export class OpenStream extends Transform {
  private header: ShredHeader | null = null;
  private headerBytes: Buffer | null = null;
  private key: Buffer | null = null;
  private cutter: UnitCutter | null = null;
  private head: Buffer[] = [];
  private index = 0;

  constructor(private readonly keyFor: (keyId: string) => DataKey) {
    super();
  }

  override _transform(data: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    try {
      if (!this.cutter) {
        this.head.push(data);
        const all = Buffer.concat(this.head);
        if (all.length < SHRED_HEADER_BYTES) return done();
        this.head = [];
        this.headerBytes = Buffer.from(all.subarray(0, SHRED_HEADER_BYTES));
        this.header = parseShredHeader(this.headerBytes);
        this.key = this.keyFor(this.header.keyId).key;
        this.cutter = new UnitCutter(this.header.chunkSize + SHRED_TAG_BYTES);
        data = all.subarray(SHRED_HEADER_BYTES);
      }
      this.cutter.feed(data, (u) => this.open(u, false));
      done();
    } catch (err) {
      done(err as Error);
    }
  }

  private open(sealed: Buffer, final: boolean): void {
    const h = this.header as ShredHeader;
    this.push(openChunk(this.key as Buffer, this.headerBytes as Buffer, h.objectSalt, this.index++, final, sealed));
  }

  override _flush(done: TransformCallback): void {
    try {
      if (!this.cutter) throw new DomainError("SHRED.BAD_FORMAT", "shorter than the header");
      this.open(this.cutter.take(), true);
      done();
    } catch (err) {
      done(err as Error);
    }
  }
}

/**
 * Seals one part of a sealed multipart upload from its plaintext range (docs/adr/0037 "Artifacts";
 * the layout is @kiln/domain sealedParts): chunks numbered from the part's first, the header in
 * front of part 1, the object's last chunk flagged final. Fed the same plaintext with the same
 * header it yields the same bytes, so a retried part PUTs exactly what the first try did.
 */
export class PartSealStream extends Transform {
  private readonly salt: Buffer;
  private readonly cutter: UnitCutter;
  private index: number;
  private readonly stopAt: number; // not "end": that is Writable.end

  constructor(
    private readonly key: Buffer,
    private readonly header: Buffer,
    private readonly part: { firstChunk: number; chunks: number; withHeader: boolean; endsFinal: boolean },
  ) {
    super();
    const h = parseShredHeader(header);
    if (key.length !== 32) throw new DomainError("SHRED.KEY_UNAVAILABLE", "a data key is 32 bytes");
    this.salt = Buffer.from(h.objectSalt);
    this.cutter = new UnitCutter(h.chunkSize);
    this.index = part.firstChunk;
    this.stopAt = part.firstChunk + part.chunks;
    if (part.withHeader) this.push(header.subarray(0, SHRED_HEADER_BYTES));
  }

  private seal(plain: Buffer): void {
    if (this.index >= this.stopAt)
      throw new DomainError("SHRED.BAD_FORMAT", "the part holds more chunks than its layout");
    const final = this.part.endsFinal && this.index === this.stopAt - 1;
    const [body, tag] = sealChunkParts(
      this.key,
      this.header.subarray(0, SHRED_HEADER_BYTES),
      this.salt,
      this.index++,
      final,
      plain,
    );
    this.push(body);
    this.push(tag);
  }

  override _transform(data: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    try {
      this.cutter.feed(data, (u) => this.seal(u));
      done();
    } catch (err) {
      done(err as Error);
    }
  }

  override _flush(done: TransformCallback): void {
    try {
      this.seal(this.cutter.take());
      if (this.index !== this.stopAt)
        throw new DomainError(
          "SHRED.BAD_FORMAT",
          `the part held ${this.index - this.part.firstChunk} chunks, expected ${this.part.chunks}`,
        );
      done();
    } catch (err) {
      done(err as Error);
    }
  }
}

/** The header of an object whose key id, chunk size and salt the control plane fixed at open. */
export function headerFor(keyId: string, chunkSize: number, salt: Uint8Array): Buffer {
  return Buffer.from(encodeShredHeader({ chunkSize, keyId, objectSalt: salt }));
}
