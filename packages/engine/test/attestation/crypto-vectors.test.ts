import { createPublicKey, generateKeyPairSync } from "node:crypto";
import { readFileSync } from "node:fs";
import { chmod, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { vectorPath } from "@kiln/testkit";
import { fromBase64Any, pae, utf8, validateSlsaProvenance, validateStatement } from "@kiln/domain";
import { describe, expect, it } from "vitest";
import { signStatement, verifyAttestationEnvelope } from "../../src/attestation/dsse-envelope.ts";
import { verifyDsseSignature, verifyEcdsaP256 } from "../../src/attestation/ecdsa-verify.ts";
import { loadFileSigner } from "../../src/attestation/signer.ts";

interface WycheproofTest {
  tcId: number;
  comment: string;
  msg: string;
  sig: string;
  result: "valid" | "invalid" | "acceptable";
}
interface WycheproofFile {
  numberOfTests: number;
  testGroups: { publicKeyPem: string; sha: string; tests: WycheproofTest[] }[];
}

describe("Wycheproof ecdsa_secp256r1_sha256_p1363 against Kiln's ECDSA verifier", () => {
  const file = JSON.parse(
    readFileSync(vectorPath("wycheproof/testvectors_v1/ecdsa_secp256r1_sha256_p1363_test.json"), "utf8"),
  ) as WycheproofFile;
  const cases = file.testGroups.flatMap((g) => g.tests.map((t) => ({ ...t, pem: g.publicKeyPem })));
  it("has the whole suite", () => {
    expect(cases.length).toBe(file.numberOfTests);
    expect(cases.filter((t) => t.result === "invalid").length).toBeGreaterThan(50);
  });
  it("accepts every valid signature and rejects every invalid one", () => {
    const wrong: string[] = [];
    for (const t of cases) {
      if (t.result === "acceptable") continue;
      const ok = verifyEcdsaP256(t.pem, Buffer.from(t.msg, "hex"), Buffer.from(t.sig, "hex"), "ieee-p1363");
      if (ok !== (t.result === "valid")) wrong.push(`${t.tcId} ${t.comment}`);
    }
    expect(wrong).toEqual([]);
  });
});

describe("DSSE spec test vector (protocol.md: ECDSA P-256, raw r||s)", () => {
  // The spec gives the key as decimal coordinates; a JWK is the plainest way to hand them to OpenSSL.
  const b64u = (n: bigint) => Buffer.from(n.toString(16).padStart(64, "0"), "hex").toString("base64url");
  const spki = createPublicKey({
    key: {
      kty: "EC",
      crv: "P-256",
      x: b64u(46950820868899156662930047687818585632848591499744589407958293238635476079160n),
      y: b64u(5640078356564379163099075877009565129882514886557779369047442380624545832820n),
    },
    format: "jwk",
  })
    .export({ type: "spki", format: "pem" })
    .toString();
  const std = "A3JqsQGtVsJ2O2xqrI5IcnXip5GToJ3F+FnZ+O88SjtR6rDAajabZKciJTfUiHqJPcIAriEGAHTVeCUjW2JIZA==";
  const signed = pae("http://example.com/HelloWorld", utf8("hello world"));
  it("verifies the signature given in standard base64", () => {
    expect(verifyDsseSignature(spki, signed, fromBase64Any(std) ?? new Uint8Array())).toBe(true);
  });
  it("verifies the same signature in URL-safe base64", () => {
    const url = std.replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
    expect(verifyDsseSignature(spki, signed, fromBase64Any(url) ?? new Uint8Array())).toBe(true);
  });
  it("rejects it over another body or another type", () => {
    const sig = fromBase64Any(std) ?? new Uint8Array();
    expect(verifyDsseSignature(spki, pae("http://example.com/HelloWorld", utf8("hello world!")), sig)).toBe(false);
    expect(verifyDsseSignature(spki, pae("http://example.com/Hello", utf8("hello world")), sig)).toBe(false);
  });
});

describe("GitHub's happy-path-intoto-in-dsse-v3 statement (sigstore-conformance)", () => {
  it("passes the in-toto and SLSA rules", () => {
    const bundle = JSON.parse(
      readFileSync(
        vectorPath("sigstore-conformance/test/assets/bundle-verify/happy-path-intoto-in-dsse-v3/bundle.sigstore.json"),
        "utf8",
      ),
    ) as { dsseEnvelope: { payload: string } };
    const st = validateStatement(JSON.parse(Buffer.from(bundle.dsseEnvelope.payload, "base64").toString("utf8")));
    expect(st).toMatchObject({ ok: true });
    if (st.ok) expect(validateSlsaProvenance(st.value)).toMatchObject({ ok: true });
  });
});

describe("the key file signer", () => {
  it("signs envelopes its published key verifies, and refuses a key file others can read", async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), "kiln-attest-key-"));
    try {
      const file = path.join(dir, "k.pem");
      const { privateKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
      await writeFile(file, privateKey.export({ type: "pkcs8", format: "pem" }), { mode: 0o644 });
      await chmod(file, 0o644);
      await expect(loadFileSigner(file)).rejects.toThrow(/readable by group or others/);
      await chmod(file, 0o600);
      const signer = await loadFileSigner(file);
      const st = {
        _type: "https://in-toto.io/Statement/v1" as const,
        subject: [{ name: "a", digest: { sha256: "a".repeat(64) } }],
        predicateType: "https://slsa.dev/provenance/v1",
        predicate: {
          buildDefinition: { buildType: "https://kiln.dev/x", externalParameters: {} },
          runDetails: { builder: { id: "https://kiln.example/builders/process" } },
        },
      };
      const { envelope } = await signStatement(signer, st);
      const keys = [{ keyId: signer.keyId, spkiPem: signer.spkiPem }];
      expect(verifyAttestationEnvelope(envelope, keys)).toMatchObject({ ok: true });
      const other = generateKeyPairSync("ec", { namedCurve: "P-256" })
        .publicKey.export({ type: "spki", format: "pem" })
        .toString();
      expect(verifyAttestationEnvelope(envelope, [{ keyId: signer.keyId, spkiPem: other }])).toMatchObject({
        ok: false,
        rule: "dsse.signature",
      });
      const tampered = {
        ...envelope,
        payload: Buffer.from(
          JSON.stringify({ ...st, subject: [{ name: "a", digest: { sha256: "b".repeat(64) } }] }),
        ).toString("base64"),
      };
      expect(verifyAttestationEnvelope(tampered, keys)).toMatchObject({ ok: false, rule: "dsse.signature" });
      expect(verifyAttestationEnvelope({ ...envelope, payloadType: "application/json" }, keys)).toMatchObject({
        ok: false,
        rule: "dsse.payload_type",
      });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
