import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { SecretMasker } from "../logs/index.ts";
import { maskFormsOf, maskPatternsFor } from "./mask-forms.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();

function maskWhole(patterns: string[], text: string): string {
  const m = new SecretMasker(patterns);
  return dec.decode(Buffer.concat([m.push(enc.encode(text)), m.end()]));
}

function maskSplit(patterns: string[], bytes: Uint8Array, cuts: number[]): string {
  const m = new SecretMasker(patterns);
  const out: Uint8Array[] = [];
  let at = 0;
  for (const c of [...new Set(cuts)].sort((a, b) => a - b)) {
    out.push(m.push(bytes.subarray(at, c)));
    at = c;
  }
  out.push(m.push(bytes.subarray(at)), m.end());
  return dec.decode(Buffer.concat(out));
}

describe("maskFormsOf", () => {
  it("has the value, its base64 (std, unpadded, URL-safe), URL-encoded and JSON-escaped forms", () => {
    const v = 'p@ss w/"rd"+ü?';
    const forms = maskFormsOf(v);
    const b64 = Buffer.from(v).toString("base64");
    expect(forms).toEqual(
      expect.arrayContaining([
        v,
        b64,
        b64.replace(/=+$/, ""),
        Buffer.from(v).toString("base64url"),
        encodeURIComponent(v),
        encodeURIComponent(v).replace(/%20/g, "+"),
        JSON.stringify(v).slice(1, -1),
        'p@ss w/\\"rd\\"+\\u00fc?',
      ]),
    );
  });
});

describe("masking delivered secrets in a stream", () => {
  const value = 's3cr3t/Value+with=odd&chars "quoted"';
  const patterns = maskPatternsFor([value]);
  const text = [
    "start ",
    value,
    " b64=",
    Buffer.from(value).toString("base64"),
    " url=",
    encodeURIComponent(value),
    " json=",
    JSON.stringify({ token: value }),
    " b64url=",
    Buffer.from(value).toString("base64url"),
    " end\n",
  ].join("");
  const bytes = enc.encode(text);
  const whole = maskWhole(patterns, text);

  it("leaves no form of the value in the output", () => {
    for (const f of maskFormsOf(value)) expect(whole).not.toContain(f);
    expect(whole).toBe('start *** b64=*** url=*** json={"token":"***"} b64url=*** end\n');
  });

  it("gives the same bytes whichever single position the stream is split at (every position)", () => {
    for (let i = 0; i <= bytes.length; i++) expect(maskSplit(patterns, bytes, [i]), `split at ${i}`).toBe(whole);
  });

  it("gives the same bytes for any set of split points (property)", () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: bytes.length }), { maxLength: 12 }), (cuts) => {
        expect(maskSplit(patterns, bytes, cuts)).toBe(whole);
      }),
      { numRuns: 500 },
    );
  });

  it("masks random values in random text split anywhere (property)", () => {
    const valueArb = fc.string({
      minLength: 4,
      maxLength: 24,
      unit: fc.constantFrom("a", "b", "/", "+", "=", " ", "é", '"', "\\"),
    });
    const fill = fc.string({ maxLength: 30, unit: fc.constantFrom("x", "y", " ", "\n", "=") });
    fc.assert(
      fc.property(valueArb, fill, fill, (v, pre, post) => {
        const ps = maskPatternsFor([v]);
        const s = `${pre}${v}${post}${Buffer.from(v).toString("base64")}${pre}${JSON.stringify(v)}`;
        const b = enc.encode(s);
        const expected = maskWhole(ps, s);
        for (let i = 0; i <= b.length; i++) expect(maskSplit(ps, b, [i])).toBe(expected);
        expect(expected).not.toContain(v);
      }),
      { numRuns: 200 },
    );
  });

  it("a value learnt mid-stream is masked in the bytes still held back", () => {
    const m = new SecretMasker(["zzzzzz"]);
    const first = m.push(enc.encode("abc zzz"));
    const more = m.withMore(["zzztopsecret"]);
    const rest = more.push(enc.encode("topsecret tail"));
    expect(dec.decode(Buffer.concat([first, rest, more.end()]))).toBe("abc *** tail");
  });
});
