import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { SecretMasker, secretValuesFromEnv } from "./secret-masker.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();

/** Feeds `text` in the given pieces and returns everything emitted. */
function maskInPieces(secrets: string[], pieces: Uint8Array[]): string {
  const m = new SecretMasker(secrets);
  const out: Uint8Array[] = [];
  for (const p of pieces) out.push(m.push(p));
  out.push(m.end());
  return dec.decode(Buffer.concat(out));
}

function split(bytes: Uint8Array, cuts: number[]): Uint8Array[] {
  const points = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
  const pieces: Uint8Array[] = [];
  let at = 0;
  for (const p of points) {
    pieces.push(bytes.subarray(at, p));
    at = p;
  }
  pieces.push(bytes.subarray(at));
  return pieces;
}

describe("secretValuesFromEnv", () => {
  it("takes secret-named entries long enough to be worth masking", () => {
    expect(
      secretValuesFromEnv({
        API_TOKEN: "tok-123456",
        DB_PASSWORD: "hunter22",
        SSH_KEY: "k",
        Public: "visible",
        secret_sauce: "ketchup!",
      }).sort(),
    ).toEqual(["hunter22", "ketchup!", "tok-123456"]);
  });
  it("also masks each long line of a multi-line secret", () => {
    expect(secretValuesFromEnv({ DEPLOY_KEY: "-----BEGIN-----\nAAAABBBBCCCC\nend" })).toEqual([
      "-----BEGIN-----\nAAAABBBBCCCC\nend",
      "-----BEGIN-----",
      "AAAABBBBCCCC",
    ]);
  });
});

describe("SecretMasker", () => {
  it("masks secrets, including one split across chunk boundaries", () => {
    expect(maskInPieces(["hunter22"], [enc.encode("pw=hun"), enc.encode("ter"), enc.encode("22 ok\n")])).toBe(
      "pw=*** ok\n",
    );
    expect(maskInPieces(["hunter22"], [enc.encode("hunter2"), enc.encode("hunter22")])).toBe("hunter2***");
  });

  it("holds back only what could still become a secret, and releases it at the end", () => {
    const m = new SecretMasker(["abcdef"]);
    expect(dec.decode(m.push(enc.encode("xyzabc")))).toBe("xyz");
    expect(m.heldBytes).toBe(3);
    expect(dec.decode(m.end())).toBe("abc");
  });

  it("passes bytes through untouched when there is nothing to mask", () => {
    const m = new SecretMasker([]);
    const data = enc.encode("plain");
    expect(m.push(data)).toBe(data);
  });

  it("handles multi-byte UTF-8 secrets and binary data", () => {
    expect(maskInPieces(["pässwörd"], split(enc.encode("x pässwörd y"), [4, 7]))).toBe("x *** y");
    const binary = new Uint8Array([0, 255, 128, 0x9d, 10]);
    expect(Buffer.from(new SecretMasker(["zzzz"]).push(binary))).toEqual(Buffer.from(binary));
  });

  it("masking is independent of where the stream is cut (property)", () => {
    const alphabet = fc.constantFrom("a", "b", "c", "x", "\n");
    const secret = fc.array(fc.constantFrom("a", "b", "c"), { minLength: 4, maxLength: 7 }).map((a) => a.join(""));
    fc.assert(
      fc.property(
        fc.array(secret, { minLength: 1, maxLength: 3 }),
        fc.array(alphabet, { maxLength: 80 }),
        fc.array(fc.nat(), { maxLength: 10 }),
        (secrets, chars, cuts) => {
          const bytes = enc.encode(chars.join(""));
          const sorted = [...new Set(secrets)].sort((a, b) => b.length - a.length);
          const whole = maskInPieces(sorted, [bytes]);
          expect(maskInPieces(sorted, split(bytes, cuts))).toBe(whole);
          for (const s of sorted) expect(whole.includes(s)).toBe(false);
        },
      ),
      { numRuns: 500 },
    );
  });
});
