import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  chunkAad,
  chunkCount,
  chunkNonce,
  cipherRangeFor,
  encodeShredHeader,
  parseShredHeader,
  plainSizeOf,
  SHRED_HEADER_BYTES,
  sealedSize,
} from "./chunk-framing.ts";

const hex = (b: Uint8Array) => Buffer.from(b).toString("hex");
const KEY_ID = "00112233-4455-6677-8899-aabbccddeeff";
const SALT = Uint8Array.from([1, 2, 3, 4, 5, 6, 7, 8]);

describe("shred framing", () => {
  it("lays the header out byte by byte as the ADR documents", () => {
    const h = encodeShredHeader({ chunkSize: 65536, keyId: KEY_ID, objectSalt: SALT });
    // "KLNS" | 01 | 000000 | 00010000 | key id | salt
    expect(hex(h)).toBe(
      `4b4c4e53` + `01` + `000000` + `00010000` + `00112233445566778899aabbccddeeff` + `0102030405060708`,
    );
    expect(h.length).toBe(SHRED_HEADER_BYTES);
    expect(parseShredHeader(h)).toEqual({ version: 1, chunkSize: 65536, keyId: KEY_ID, objectSalt: SALT });
  });

  it("refuses headers that are not ours, of another version, with reserved bits or a zero chunk size", () => {
    const h = encodeShredHeader({ chunkSize: 16, keyId: KEY_ID, objectSalt: SALT });
    const bad = (i: number, v: number) => {
      const c = h.slice();
      c[i] = v;
      return c;
    };
    for (const c of [
      h.subarray(0, 35),
      bad(0, 0x4a),
      bad(4, 2),
      bad(6, 1),
      Uint8Array.from([...h.subarray(0, 8), 0, 0, 0, 0, ...h.subarray(12)]),
    ])
      expect(() => parseShredHeader(c)).toThrow(expect.objectContaining({ code: "SHRED.BAD_FORMAT" }));
  });

  it("derives the nonce from salt and index and authenticates index and final flag", () => {
    expect(hex(chunkNonce(SALT, 0))).toBe("010203040506070800000000");
    expect(hex(chunkNonce(SALT, 0x01020304))).toBe("010203040506070801020304");
    const h = encodeShredHeader({ chunkSize: 16, keyId: KEY_ID, objectSalt: SALT });
    expect(hex(chunkAad(h, 2, false))).toBe(`${hex(h)}0000000200`);
    expect(hex(chunkAad(h, 2, true))).toBe(`${hex(h)}0000000201`);
    expect(() => chunkNonce(SALT, 2 ** 32)).toThrow();
  });

  it("sizes: an empty object is one tag, full chunks carry one tag each", () => {
    expect(sealedSize(0, 16)).toBe(36 + 16);
    expect(sealedSize(16, 16)).toBe(36 + 16 + 16);
    expect(sealedSize(17, 16)).toBe(36 + 17 + 32);
    expect(chunkCount(65536 * 3, 65536)).toBe(3);
    expect(plainSizeOf(36 + 15, 16)).toBeNull();
    expect(plainSizeOf(36 + 16 + 16 + 16, 16)).toBeNull(); // a full chunk then an empty "final" chunk
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 5000 }), fc.integer({ min: 1, max: 300 }), (n, cs) => {
        expect(plainSizeOf(sealedSize(n, cs), cs)).toBe(n);
      }),
    );
  });

  it("maps a plaintext range to exactly the sealed bytes of the chunks it touches", () => {
    expect(cipherRangeFor(100, 16, 0, 1)).toEqual({
      firstChunk: 0,
      lastChunk: 0,
      cipherStart: 36,
      cipherEnd: 68,
      skip: 0,
      length: 1,
    });
    // the last chunk of 100 bytes in 16s is 4 bytes long: 36 + 6*32 + 4 + 16
    expect(cipherRangeFor(100, 16, 90, 100)).toEqual({
      firstChunk: 5,
      lastChunk: 6,
      cipherStart: 196,
      cipherEnd: 248,
      skip: 10,
      length: 10,
    });
    expect(cipherRangeFor(100, 16, 90, 100).cipherEnd).toBe(sealedSize(100, 16));
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 2000 }),
        fc.integer({ min: 1, max: 64 }),
        fc.nat(),
        fc.nat(),
        (n, cs, a, b) => {
          const start = a % n;
          const end = start + 1 + (b % (n - start));
          const r = cipherRangeFor(n, cs, start, end);
          // Brute force: walk the chunks, recording where each starts in the sealed object.
          let pos = SHRED_HEADER_BYTES;
          for (let i = 0; i < chunkCount(n, cs); i++) {
            const len = Math.min(cs, n - i * cs) + 16;
            if (i === r.firstChunk) expect(r.cipherStart).toBe(pos);
            if (i === r.lastChunk) expect(r.cipherEnd).toBe(pos + len);
            pos += len;
          }
          expect(r.firstChunk * cs + r.skip).toBe(start);
          expect(r.lastChunk).toBe(Math.floor((end - 1) / cs));
        },
      ),
    );
    expect(() => cipherRangeFor(10, 16, 5, 11)).toThrow();
    expect(() => cipherRangeFor(10, 16, 5, 5)).toThrow();
  });
});
