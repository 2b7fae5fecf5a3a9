import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { fromBase64, toBase64 } from "./bytes.ts";
import { formatCheckpoint, parseCheckpoint } from "./checkpoint.ts";
import { merkleHasher } from "./hash.ts";
import { openSignedNote, formatSignedNote, parseVerifierKey, formatVerifierKey } from "./note.ts";
import {
  decodeEntryBundle,
  encodeEntryBundle,
  encodeTileIndex,
  parseTilePath,
  tilePath,
  tileWidthAt,
} from "./tiles.ts";
import {
  consistencyRanges,
  foldNodes,
  inclusionRanges,
  nodesCompletedBy,
  rangeHashFromLeaves,
  rangeNodes,
  rootFromLeaves,
} from "./tree.ts";
import { verifyConsistency, verifyInclusion } from "./verify.ts";

const sha256 = (b: Uint8Array) => new Uint8Array(createHash("sha256").update(b).digest());
const h = merkleHasher(sha256);
const leaves = Array.from({ length: 70 }, (_, i) => h.leaf(new TextEncoder().encode(`entry ${i}`)));

// Proofs built the way the engine builds them: ranges -> perfect nodes -> fold, with node hashes
// taken from the leaves here instead of the database.
const nodeHash = (level: number, index: number) =>
  rangeHashFromLeaves(h, leaves, { start: index * 2 ** level, end: (index + 1) * 2 ** level });
const rangeHash = (r: { start: number; end: number }) =>
  foldNodes(
    h,
    rangeNodes(r).map((n) => nodeHash(n.level, n.index)),
  );

describe("RFC 6962 proofs from stored perfect nodes", () => {
  it("every inclusion proof in trees of 1..70 leaves verifies, and fails for the wrong leaf", () => {
    for (let size = 1; size <= 70; size++) {
      const root = rootFromLeaves(h, leaves.slice(0, size));
      expect(rangeHash({ start: 0, end: size })).toEqual(root);
      for (let i = 0; i < size; i++) {
        const proof = inclusionRanges(i, size).map(rangeHash);
        expect(verifyInclusion(h, BigInt(i), BigInt(size), leaves[i]!, proof, root)).toEqual({ ok: true });
        const other = leaves[(i + 1) % 70]!;
        expect(verifyInclusion(h, BigInt(i), BigInt(size), other, proof, root).ok).toBe(false);
      }
    }
  });

  it("every consistency proof between sizes 1..40 verifies, a swapped root fails, and none from 0 counts", () => {
    for (let to = 1; to <= 40; to++) {
      const root2 = rootFromLeaves(h, leaves.slice(0, to));
      expect(verifyConsistency(h, 0n, BigInt(to), [], h.emptyRoot(), root2).ok).toBe(false);
      for (let from = 1; from <= to; from++) {
        const root1 = rootFromLeaves(h, leaves.slice(0, from));
        const proof = consistencyRanges(from, to).map(rangeHash);
        expect(verifyConsistency(h, BigInt(from), BigInt(to), proof, root1, root2)).toEqual({ ok: true });
        if (from > 0 && from < to)
          expect(verifyConsistency(h, BigInt(from), BigInt(to), proof, root2, root1).ok).toBe(false);
      }
    }
  });

  it("appending leaf i completes one parent per trailing 1 bit of i", () => {
    expect(nodesCompletedBy(0)).toEqual([]);
    expect(nodesCompletedBy(1).map((c) => c.node)).toEqual([{ level: 1, index: 0 }]);
    expect(nodesCompletedBy(7).map((c) => c.node)).toEqual([
      { level: 1, index: 3 },
      { level: 2, index: 1 },
      { level: 3, index: 0 },
    ]);
  });
});

describe("C2SP checkpoints and signed notes", () => {
  const root = rootFromLeaves(h, leaves.slice(0, 5));
  it("formats and parses a checkpoint body, refusing malformed ones", () => {
    const body = formatCheckpoint({ origin: "example.com/tlog", size: 5, rootHash: root });
    expect(body).toBe(`example.com/tlog\n5\n${toBase64(root)}\n`);
    expect(parseCheckpoint(body)).toMatchObject({ ok: true, checkpoint: { origin: "example.com/tlog", size: 5n } });
    expect(parseCheckpoint(`${body}ext line\n`)).toMatchObject({ ok: true, checkpoint: { extensions: ["ext line"] } });
    for (const bad of [
      "example.com/tlog\n05\nx\n",
      "example.com/tlog\n5\n",
      `5\n${toBase64(root)}\n`,
      body.slice(0, -1),
    ])
      expect(parseCheckpoint(bad).ok).toBe(false);
  });

  it("opens a note when a known key verifies, ignores unknown lines, rejects a bad known signature", () => {
    const name = "example.com/tlog";
    const pub = new Uint8Array(32).fill(7);
    const vk = parseVerifierKey(sha256, formatVerifierKey(sha256, name, pub));
    if (!vk.ok) throw new Error(vk.reason);
    // A stand-in signature scheme: the point is which lines count, not Ed25519 (tested in the engine).
    const sign = (m: Uint8Array) => sha256(m);
    const verifier = {
      name,
      keyHash: vk.value.keyHash,
      verify: (m: Uint8Array, s: Uint8Array) => toBase64(sign(m)) === toBase64(s),
    };
    const body = formatCheckpoint({ origin: name, size: 5, rootHash: root });
    const witness = { name: "witness.example", keyHash: new Uint8Array([1, 2, 3, 4]), signature: new Uint8Array(72) };
    const good = { name, keyHash: vk.value.keyHash, signature: sign(new TextEncoder().encode(body)) };
    const note = formatSignedNote(body, [witness, good]);
    expect(openSignedNote(note, [verifier])).toEqual({
      ok: true,
      value: { body, verifiedBy: [name], unknownSignatures: 1 },
    });
    const forged = formatSignedNote(body, [{ ...good, signature: new Uint8Array(32) }]);
    expect(openSignedNote(forged, [verifier]).ok).toBe(false);
    expect(openSignedNote(formatSignedNote(body, [witness]), [verifier]).ok).toBe(false);
    expect(openSignedNote(`${body}\n`, [verifier]).ok).toBe(false);
    // A carriage return or other control character would let two readers see two texts.
    expect(openSignedNote(note.replace("\n", "\r\n"), [verifier]).ok).toBe(false);
    expect(
      parseVerifierKey(sha256, formatVerifierKey(sha256, name, pub).replace(/\+[0-9a-f]{8}\+/, "+00000000+")).ok,
    ).toBe(false);
  });

  it("base64 decoding is strict", () => {
    expect(fromBase64("AAE=")).toEqual(new Uint8Array([0, 1]));
    expect(fromBase64("AAF=")).toBeNull();
    expect(fromBase64("AAE")).toBeNull();
    expect(fromBase64("A=E=")).toBeNull();
  });
});

describe("C2SP tiles", () => {
  it("encodes indices in x-prefixed 3-digit groups and parses only canonical paths", () => {
    expect(encodeTileIndex(1234067)).toBe("x001/x234/067");
    expect(encodeTileIndex(5)).toBe("005");
    expect(tilePath({ level: 0, index: 1234067, width: 256 })).toBe("tile/0/x001/x234/067");
    expect(tilePath({ level: null, index: 3, width: 17 })).toBe("tile/entries/003.p/17");
    expect(parseTilePath("tile/1/x001/x234/067.p/9")).toEqual({ level: 1, index: 1234067, width: 9 });
    expect(parseTilePath("tile/entries/000")).toEqual({ level: null, index: 0, width: 256 });
    for (const bad of [
      "tile/0/5",
      "tile/0/x000/005",
      "tile/0/005.p/256",
      "tile/0/005.p/0",
      "tile/01/005",
      "tile/0/005/",
    ])
      expect(parseTilePath(bad)).toBeNull();
  });

  it("frames entry bundles with big-endian uint16 lengths", () => {
    const b = encodeEntryBundle([new Uint8Array([9]), new Uint8Array(300)]);
    expect([...b.slice(0, 4)]).toEqual([0, 1, 9, 1]);
    expect(b[4]).toBe(44);
    expect(decodeEntryBundle(b)?.map((e) => e.length)).toEqual([1, 300]);
    expect(decodeEntryBundle(b.slice(0, -1))).toBeNull();
  });

  it("computes a tile's width at a tree size", () => {
    expect(tileWidthAt(300, 0, 0)).toBe(256);
    expect(tileWidthAt(300, 0, 1)).toBe(44);
    expect(tileWidthAt(300, 1, 0)).toBe(1);
    expect(tileWidthAt(255, 1, 0)).toBe(0);
  });
});
