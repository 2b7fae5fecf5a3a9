import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { formatVerifierKey, parseVerifierKey } from "./note.ts";

const sha256 = (b: Uint8Array) => new Uint8Array(createHash("sha256").update(b).digest());

describe("verifier keys whose base64 contains '+'", () => {
  it("parse: only the first two '+' separate the fields", () => {
    // 0xfb bytes make '+' in standard base64: such a key is as valid as any other.
    const pub = new Uint8Array(32).fill(0xfb);
    const text = formatVerifierKey(sha256, "kiln.test/log", pub);
    expect(text.split("+").length).toBeGreaterThan(3);
    const r = parseVerifierKey(sha256, text);
    expect(r.ok).toBe(true);
    if (r.ok) expect(r.value.publicKey).toEqual(pub);
  });
});
