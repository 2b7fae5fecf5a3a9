import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { gcmDecrypt, gcmEncrypt, gcmOpen, gcmSeal } from "./aead.ts";

// Wycheproof's AES-GCM vectors, read in place (never copied into the repo). Only the groups our
// layout can express are ours to pass: a 12-byte IV and a 16-byte tag; every key size is run, the
// envelope itself uses 32-byte keys only.
const VECTORS = path.join(
  // Outside vectors, used in place: KILN_VECTORS_DIR where shared/ is not at /work/shared (CI).
  process.env.KILN_VECTORS_DIR ?? "/work/shared/vectors",
  "wycheproof/testvectors_v1/aes_gcm_test.json",
);

interface Vector {
  tcId: number;
  key: string;
  iv: string;
  aad: string;
  msg: string;
  ct: string;
  tag: string;
  result: "valid" | "invalid" | "acceptable";
  flags: string[];
}
interface Group {
  ivSize: number;
  tagSize: number;
  keySize: number;
  tests: Vector[];
}

const file = JSON.parse(readFileSync(VECTORS, "utf8")) as { testGroups: Group[] };
const groups = file.testGroups.filter((g) => g.ivSize === 96 && g.tagSize === 128);
const hex = (s: string) => Buffer.from(s, "hex");

describe("AES-GCM against Wycheproof aes_gcm_test.json (12-byte IV, 16-byte tag)", () => {
  it("covers the groups it claims to", () => {
    const sizes = new Set(groups.map((g) => g.keySize));
    expect(sizes).toEqual(new Set([128, 192, 256]));
    expect(groups.reduce((n, g) => n + g.tests.length, 0)).toBeGreaterThan(100);
  });

  for (const g of groups) {
    it(`key ${g.keySize} bits: ${g.tests.length} vectors`, () => {
      for (const v of g.tests) {
        const label = `tcId ${v.tcId} (${v.flags.join(",")})`;
        const opened = gcmDecrypt(hex(v.key), hex(v.iv), hex(v.ct), hex(v.tag), hex(v.aad));
        if (v.result === "invalid") {
          expect(opened, label).toBeNull();
          continue;
        }
        expect(opened?.toString("hex"), label).toBe(v.msg);
        const sealed = gcmEncrypt(hex(v.key), hex(v.iv), hex(v.msg), hex(v.aad));
        expect(sealed.ciphertext.toString("hex"), label).toBe(v.ct);
        expect(sealed.tag.toString("hex"), label).toBe(v.tag);
      }
    });
  }
});

describe("sealed layout nonce || ciphertext || tag", () => {
  const key = Buffer.alloc(32, 7);
  it("round-trips, uses a fresh nonce each time, and binds the AAD", () => {
    const a = gcmSeal(key, Buffer.from("hello"), "aad-1");
    const b = gcmSeal(key, Buffer.from("hello"), "aad-1");
    expect(a.length).toBe(12 + 5 + 16);
    expect(a.subarray(0, 12).equals(b.subarray(0, 12))).toBe(false);
    expect(gcmOpen(key, a, "aad-1")?.toString()).toBe("hello");
    expect(gcmOpen(key, a, "aad-2")).toBeNull();
  });
  it("refuses a flipped bit anywhere, a truncated blob and another key", () => {
    const a = gcmSeal(key, Buffer.from("secret value"), "x");
    for (let i = 0; i < a.length; i++) {
      const t = Buffer.from(a);
      t[i] = (t[i] ?? 0) ^ 1;
      expect(gcmOpen(key, t, "x"), `byte ${i}`).toBeNull();
    }
    expect(gcmOpen(key, a.subarray(0, 27), "x")).toBeNull();
    expect(gcmOpen(Buffer.alloc(32, 8), a, "x")).toBeNull();
  });
});
