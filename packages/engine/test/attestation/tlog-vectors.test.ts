// Outside vectors (../shared/vectors, see its README): transparency-dev/merkle's inclusion and
// consistency cases, sigstore-conformance's Rekor v2 checkpoints and inclusion proofs, and
// Wycheproof's Ed25519 cases, against the verifiers the log's clients use.
import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { tlog } from "@kiln/domain";
import { describe, expect, it } from "vitest";
import { ed25519Verify, openCheckpoint, sha256, tlogHasher } from "../../src/attestation/tlog/tlog-crypto.ts";

const VECTORS = process.env.KILN_VECTORS_DIR ?? "/work/shared/vectors";
const MERKLE = path.join(VECTORS, "transparency-dev-merkle/testdata");
const BUNDLES = path.join(VECTORS, "sigstore-conformance/test/assets/bundle-verify");

function jsonFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = path.join(dir, name);
    return statSync(p).isDirectory() ? jsonFiles(p) : p.endsWith(".json") ? [p] : [];
  });
}

/** JSON with every integer kept exact as bigint (two vectors use leaf index 2^64-1). */
function parseExact(text: string): any {
  return JSON.parse(text, (_k, v, ctx?: { source?: string }) =>
    typeof v === "number" && ctx?.source && /^-?\d+$/.test(ctx.source) ? BigInt(ctx.source) : v,
  );
}

const b64 = (s: string | null | undefined) => (s ? Buffer.from(s, "base64") : new Uint8Array(0));
const proofOf = (p: string[] | null) => (p ?? []).map((x) => new Uint8Array(b64(x)));

describe("transparency-dev/merkle vectors", () => {
  const inclusion = jsonFiles(path.join(MERKLE, "inclusion"));
  const consistency = jsonFiles(path.join(MERKLE, "consistency"));

  it("has all 196 inclusion and consistency vectors, two of them at leaf index 2^64-1", () => {
    expect(inclusion.length + consistency.length).toBe(196);
    const maxIdx = inclusion.filter((f) => parseExact(readFileSync(f, "utf8")).leafIdx === (1n << 64n) - 1n);
    expect(maxIdx).toHaveLength(2);
  });

  it.each(inclusion.map((f) => [path.relative(MERKLE, f), f]))("inclusion %s", (_name, file) => {
    const v = parseExact(readFileSync(file, "utf8"));
    const r = tlog.verifyInclusion(tlogHasher, v.leafIdx, v.treeSize, b64(v.leafHash), proofOf(v.proof), b64(v.root));
    expect(r.ok, `${v.desc}: ${r.ok ? "accepted" : r.reason}`).toBe(!v.wantErr);
  });

  it.each(consistency.map((f) => [path.relative(MERKLE, f), f]))("consistency %s", (_name, file) => {
    const v = parseExact(readFileSync(file, "utf8"));
    const r = tlog.verifyConsistency(tlogHasher, v.size1, v.size2, proofOf(v.proof), b64(v.root1), b64(v.root2));
    expect(r.ok, `${v.desc}: ${r.ok ? "accepted" : r.reason}`).toBe(!v.wantErr);
  });
});

/** The log's verifier key from a case's trusted root: its Ed25519 tlog key, named by the log's host. */
function rekorVerifierKeys(dir: string): string[] {
  const root = JSON.parse(readFileSync(path.join(dir, "trusted_root.json"), "utf8"));
  return root.tlogs
    .filter((l: any) => l.publicKey.keyDetails === "PKIX_ED25519")
    .map((l: any) =>
      tlog.formatVerifierKey(sha256, new URL(l.baseUrl).host, new Uint8Array(b64(l.publicKey.rawBytes)).slice(-32)),
    );
}

function rekorEntry(dir: string): any {
  return JSON.parse(readFileSync(path.join(dir, "bundle.sigstore.json"), "utf8")).verificationMaterial.tlogEntries[0];
}

describe("sigstore-conformance Rekor v2 checkpoints and inclusion proofs", () => {
  const cases = readdirSync(BUNDLES).filter((d) => d.startsWith("rekor2-"));
  const checkpointCases = cases.filter((d) => d.startsWith("rekor2-checkpoint-"));

  it("has the 10 checkpoint cases, 5 to reject", () => {
    expect(checkpointCases).toHaveLength(10);
    expect(checkpointCases.filter((d) => d.endsWith("_fail"))).toHaveLength(5);
  });

  it.each(checkpointCases)("%s", (name) => {
    const dir = path.join(BUNDLES, name);
    const [vk, ...more] = rekorVerifierKeys(dir);
    expect(vk && more.length === 0).toBe(true);
    const e = rekorEntry(dir);
    const opened = openCheckpoint(e.inclusionProof.checkpoint.envelope, vk!);
    if (name.endsWith("_fail")) {
      expect(opened.ok, "must be rejected").toBe(false);
      return;
    }
    if (!opened.ok) throw new Error(`${opened.rule}: ${opened.reason}`);
    // The checkpoint commits to the proof's tree, and the entry is in it.
    expect(opened.checkpoint.size).toBe(BigInt(e.inclusionProof.treeSize));
    expect(Buffer.from(opened.checkpoint.rootHash).toString("base64")).toBe(e.inclusionProof.rootHash);
    expect(opened.note.unknownSignatures).toBeGreaterThanOrEqual(0);
  });

  const withProofs = cases.filter((d) => rekorEntry(path.join(BUNDLES, d)).inclusionProof);
  it.each(withProofs)(
    "%s: the entry's inclusion proof verifies against its root, and not with a bit flipped",
    (name) => {
      const e = rekorEntry(path.join(BUNDLES, name));
      const p = e.inclusionProof;
      const leaf = tlogHasher.leaf(b64(e.canonicalizedBody));
      const proof = proofOf(p.hashes);
      const args = [BigInt(p.logIndex), BigInt(p.treeSize), leaf, proof, new Uint8Array(b64(p.rootHash))] as const;
      expect(tlog.verifyInclusion(tlogHasher, ...args)).toEqual({ ok: true });
      const flipped = proof.map((h) => new Uint8Array(h));
      flipped[0]![5]! ^= 0x10;
      expect(tlog.verifyInclusion(tlogHasher, args[0], args[1], leaf, flipped, args[4]).ok).toBe(false);
      expect(tlog.verifyInclusion(tlogHasher, args[0] + 1n, args[1], leaf, proof, args[4]).ok).toBe(false);
    },
  );

  it("covers every Rekor v2 bundle that carries an inclusion proof", () => {
    expect(withProofs.length).toBe(cases.length - 1);
  });
});

describe("Wycheproof Ed25519", () => {
  const suite = JSON.parse(readFileSync(path.join(VECTORS, "wycheproof/testvectors_v1/ed25519_test.json"), "utf8"));
  const tests: [number, string, any, any][] = suite.testGroups.flatMap((g: any) =>
    g.tests.map((c: any) => [c.tcId, c.comment, g.publicKey.pk, c]),
  );
  it("has every case", () => expect(tests.length).toBe(suite.numberOfTests));
  it.each(tests)("tc %i %s", (_id, _comment, pk, c) => {
    const ok = ed25519Verify(Buffer.from(pk, "hex"), Buffer.from(c.msg, "hex"), Buffer.from(c.sig, "hex"));
    expect(ok).toBe(c.result === "valid");
  });
});
