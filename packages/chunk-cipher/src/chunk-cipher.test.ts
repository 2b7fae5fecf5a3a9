import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { cipherRangeFor, SHRED_HEADER_BYTES } from "@kiln/domain";
import { describe, expect, it } from "vitest";
import { OpenStream, openBuffer, openRange, SealStream, sealBuffer, type DataKey } from "./chunk-cipher.ts";

const KEY: DataKey = {
  id: "00112233-4455-6677-8899-aabbccddeeff",
  key: Buffer.from(Array.from({ length: 32 }, (_, i) => i)),
};
const SALT = Uint8Array.from([1, 2, 3, 4, 5, 6, 7, 8]);
const FOX = Buffer.from("The quick brown fox jumps over the lazy dog");
// Produced by python3-cryptography's AESGCM from the layout in ADR 0037 (header, nonce = salt ||
// index, AAD = header || index || final), not by this code: 3 chunks of 16, 16 and 11 bytes.
const FOX_SEALED =
  "4b4c4e53010000000000001000112233445566778899aabbccddeeff0102030405060708de774b90fc629c08e7e8b62f1b89a176a1a6cbd79025f6518bae384569d2f1c403e49993c9b7dd80d34c5bd502aaa1e22cf8625ac48ba71e253aff61e81774c7ea9c903a2b7f89179b2d150a234b68461e3e26c504b21a90c71704";

const decryptFails = expect.objectContaining({ code: "SHRED.DECRYPT_FAILED" });

describe("chunk cipher", () => {
  it("matches the independently produced vector in both directions", () => {
    expect(sealBuffer(KEY, FOX, 16, SALT).toString("hex")).toBe(FOX_SEALED);
    expect(openBuffer(KEY, Buffer.from(FOX_SEALED, "hex")).equals(FOX)).toBe(true);
  });

  it("detects truncation, reordering, extension, bit flips, splicing and the wrong key", () => {
    const s = Buffer.from(FOX_SEALED, "hex");
    const h = s.subarray(0, 36);
    const c0 = s.subarray(36, 68);
    const c1 = s.subarray(68, 100);
    const c2 = s.subarray(100);
    // Cut at a chunk boundary: chunk 1 was sealed as not-final.
    expect(() => openBuffer(KEY, Buffer.concat([h, c0, c1]))).toThrow(decryptFails);
    expect(() => openBuffer(KEY, Buffer.concat([h, c1, c0, c2]))).toThrow(decryptFails);
    expect(() => openBuffer(KEY, Buffer.concat([h, c0, c1, c2, c2]))).toThrow(decryptFails);
    expect(() => openBuffer(KEY, s.subarray(0, s.length - 1))).toThrow(decryptFails);
    for (const at of [40, 70, 110, s.length - 1]) {
      const flipped = Buffer.from(s);
      flipped[at] = (flipped[at] as number) ^ 0x01;
      expect(() => openBuffer(KEY, flipped)).toThrow(decryptFails);
    }
    // A chunk 0 from another object under the same key (another salt) does not splice in.
    const other = sealBuffer(KEY, FOX, 16);
    expect(() => openBuffer(KEY, Buffer.concat([h, other.subarray(36, 68), c1, c2]))).toThrow(decryptFails);
    // A header edited to claim another chunk size is authenticated too.
    const resized = Buffer.from(s);
    resized[11] = 32;
    expect(() => openBuffer(KEY, resized)).toThrow(decryptFails);
    expect(() => openBuffer({ id: KEY.id, key: randomBytes(32) }, s)).toThrow(decryptFails);
    expect(() => openBuffer({ id: "ffffffff-4455-6677-8899-aabbccddeeff", key: KEY.key }, s)).toThrow(decryptFails);
  });

  it("an empty object is one empty final chunk", () => {
    const s = sealBuffer(KEY, Buffer.alloc(0), 16);
    expect(s.length).toBe(SHRED_HEADER_BYTES + 16);
    expect(openBuffer(KEY, s).length).toBe(0);
  });

  it("streams: any split of the input seals to what the buffer path opens, and back", async () => {
    for (const size of [0, 1, 65535, 65536, 65537, 3 * 65536 + 17]) {
      const plain = randomBytes(size);
      const pieces: Buffer[] = [];
      for (let at = 0; at < size; ) {
        const n = 1 + Math.floor(Math.random() * 40_000);
        pieces.push(plain.subarray(at, at + n));
        at += n;
      }
      const sealed = await collect(Readable.from(pieces), new SealStream(KEY));
      expect(openBuffer(KEY, sealed).equals(plain)).toBe(true);
      const opened = await collect(Readable.from(splitRandomly(sealed)), new OpenStream(() => KEY));
      expect(opened.equals(plain)).toBe(true);
    }
  });

  it("a stream cut short at a chunk boundary fails instead of ending early", async () => {
    const sealed = sealBuffer(KEY, randomBytes(3 * 65536 + 5));
    const cut = sealed.subarray(0, SHRED_HEADER_BYTES + 2 * (65536 + 16));
    await expect(collect(Readable.from([cut]), new OpenStream(() => KEY))).rejects.toThrow(decryptFails);
  });

  it("opens any plaintext range from only the chunks it touches", () => {
    const plain = randomBytes(1000);
    const sealed = sealBuffer(KEY, plain, 64);
    for (let t = 0; t < 200; t++) {
      const start = Math.floor(Math.random() * 1000);
      const end = start + 1 + Math.floor(Math.random() * (1000 - start));
      const r = cipherRangeFor(1000, 64, start, end);
      const got = openRange(KEY, sealed.subarray(0, 36), 1000, start, end, sealed.subarray(r.cipherStart, r.cipherEnd));
      expect(got.equals(plain.subarray(start, end))).toBe(true);
    }
    // The last chunk must still be final in a range read: a range ending there checks the flag.
    const r = cipherRangeFor(1000, 64, 990, 1000);
    const body = Buffer.from(sealed.subarray(r.cipherStart, r.cipherEnd));
    body[0] = (body[0] as number) ^ 1;
    expect(() => openRange(KEY, sealed.subarray(0, 36), 1000, 990, 1000, body)).toThrow(decryptFails);
  });

  it("python3-cryptography opens a chunk we sealed and seals one we open", () => {
    const plain = randomBytes(70_000);
    const sealed = sealBuffer(KEY, plain);
    const script = `
import sys, struct, json
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
a = json.loads(sys.stdin.read())
key, sealed, plain = bytes.fromhex(a["key"]), bytes.fromhex(a["sealed"]), bytes.fromhex(a["plain"])
header = sealed[:36]
cs = struct.unpack(">I", header[8:12])[0]
salt = header[28:36]
# chunk 1 is the final one of a 70000-byte object in 64 KiB chunks
c1 = sealed[36 + cs + 16:]
got = AESGCM(key).decrypt(salt + struct.pack(">I", 1), c1, header + struct.pack(">I", 1) + b"\\x01")
assert got == plain[cs:], "python decrypted other bytes"
# and a whole object of python's own, one 5-byte final chunk under a salt of its choosing
h2 = header[:28] + bytes(range(8))
out = h2 + AESGCM(key).encrypt(bytes(range(8)) + struct.pack(">I", 0), b"hello", h2 + struct.pack(">I", 0) + b"\\x01")
print(out.hex())
`;
    const out = execFileSync("python3", ["-c", script], {
      input: JSON.stringify({
        key: KEY.key.toString("hex"),
        sealed: sealed.toString("hex"),
        plain: plain.toString("hex"),
      }),
      maxBuffer: 1 << 24,
    });
    expect(openBuffer(KEY, Buffer.from(out.toString().trim(), "hex")).toString()).toBe("hello");
  });
});

function splitRandomly(b: Buffer): Buffer[] {
  const out: Buffer[] = [];
  for (let at = 0; at < b.length; ) {
    const n = 1 + Math.floor(Math.random() * 50_000);
    out.push(b.subarray(at, at + n));
    at += n;
  }
  return out;
}

async function collect(src: Readable, t: SealStream | OpenStream): Promise<Buffer> {
  const out: Buffer[] = [];
  await pipeline(src, t, async (s: AsyncIterable<Buffer>) => {
    for await (const c of s) out.push(c);
  });
  return Buffer.concat(out);
}
