import { createPublicKey, generateKeyPairSync } from "node:crypto";
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { decodeJws, signEs256, verifyP256Sha256 } from "./es256-jws.ts";

// Outside vectors, used in place (never copied into the repo): Wycheproof's ECDSA P-256/SHA-256
// with P1363 (r || s) signatures, the encoding JWS ES256 uses. Every "invalid" case must be refused
// and every "valid" one accepted by the verifier verifyIdToken uses.
const VECTORS = process.env.KILN_VECTORS_DIR ?? "/work/shared/vectors";
const FILE = path.join(VECTORS, "wycheproof/testvectors_v1/ecdsa_secp256r1_sha256_p1363_test.json");

interface Group {
  /** SPKI, hex: every group has it (a few have no JWK). */
  publicKeyDer: string;
  sha: string;
  tests: { tcId: number; msg: string; sig: string; result: "valid" | "invalid" | "acceptable"; comment: string }[];
}

describe("ES256 verifier against Wycheproof ecdsa_secp256r1_sha256_p1363", () => {
  const data = JSON.parse(readFileSync(FILE, "utf8")) as { numberOfTests: number; testGroups: Group[] };

  it("accepts exactly the valid signatures", () => {
    let checked = 0;
    const wrong: string[] = [];
    for (const g of data.testGroups) {
      expect(g.sha).toBe("SHA-256");
      const key = createPublicKey({ key: Buffer.from(g.publicKeyDer, "hex"), format: "der", type: "spki" });
      for (const t of g.tests) {
        const got = verifyP256Sha256(key, Buffer.from(t.msg, "hex"), Buffer.from(t.sig, "hex"));
        // The file has no "acceptable" cases; one would be a reason to look, so it fails too.
        if (got !== (t.result === "valid")) wrong.push(`tc${t.tcId} ${t.result} (${t.comment}) -> ${got}`);
        checked++;
      }
    }
    expect(wrong).toEqual([]);
    expect(checked).toBe(data.numberOfTests);
  });
});

describe("compact JWS framing", () => {
  it("round-trips and refuses a flipped payload byte", () => {
    const { publicKey, privateKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
    const jws = signEs256(privateKey, { kid: "k1" }, { a: 1 });
    const d = decodeJws(jws);
    if (!d.ok) throw new Error("did not decode");
    expect(d.header).toEqual({ alg: "ES256", typ: "JWT", kid: "k1" });
    expect(verifyP256Sha256(publicKey, d.signingInput, d.signature)).toBe(true);
    const [h, p, s] = jws.split(".") as [string, string, string];
    const other = Buffer.from(JSON.stringify({ a: 2 })).toString("base64url");
    const t = decodeJws(`${h}.${other}.${s}`);
    expect(t.ok && verifyP256Sha256(publicKey, t.signingInput, t.signature)).toBe(false);
    expect(p).not.toBe(other);
    for (const bad of ["", "a.b", "a.b.c.d", "!.e30.", `${h}..${s}`]) expect(decodeJws(bad).ok).toBe(false);
  });
});
