// RFC 9162 2.1.3.2 and 2.1.4.2 proof verification, in the decomposed form transparency-dev/merkle
// uses (inner proof plus right border). Indices and sizes are bigint so that any log's proof can be
// checked, up to leaf index 2^64-1; the checks refuse values outside uint64.
import { bytesEqual, HASH_SIZE, type MerkleHasher } from "./hash.ts";

export type ProofCheck = { ok: true } | { ok: false; reason: string };

const U64_MAX = (1n << 64n) - 1n;
const fail = (reason: string): ProofCheck => ({ ok: false, reason });

function bitLength(v: bigint): number {
  return v === 0n ? 0 : v.toString(2).length;
}

function onesCount(v: bigint): number {
  let c = 0;
  for (const ch of v.toString(2)) if (ch === "1") c++;
  return c;
}

function trailingZeros(v: bigint): number {
  let n = 0;
  while (v > 0n && (v & 1n) === 0n) {
    v >>= 1n;
    n++;
  }
  return n;
}

/** How many proof hashes sit below the point where index's path joins the right border, and above. */
function decompose(index: bigint, size: bigint): { inner: number; border: number } {
  const inner = bitLength(index ^ (size - 1n));
  return { inner, border: onesCount(index >> BigInt(inner)) };
}

function chainInner(h: MerkleHasher, seed: Uint8Array, proof: Uint8Array[], index: bigint): Uint8Array {
  proof.forEach((p, i) => {
    seed = ((index >> BigInt(i)) & 1n) === 0n ? h.node(seed, p) : h.node(p, seed);
  });
  return seed;
}

function chainInnerRight(h: MerkleHasher, seed: Uint8Array, proof: Uint8Array[], index: bigint): Uint8Array {
  proof.forEach((p, i) => {
    if (((index >> BigInt(i)) & 1n) === 1n) seed = h.node(p, seed);
  });
  return seed;
}

function chainBorderRight(h: MerkleHasher, seed: Uint8Array, proof: Uint8Array[]): Uint8Array {
  for (const p of proof) seed = h.node(p, seed);
  return seed;
}

function inU64(...vs: bigint[]): boolean {
  return vs.every((v) => v >= 0n && v <= U64_MAX);
}

function hashesWellFormed(hs: Uint8Array[]): boolean {
  return hs.every((x) => x.length === HASH_SIZE);
}

/** The root an inclusion proof implies for leafHash at index in a tree of size, or why there is none. */
export function rootFromInclusionProof(
  h: MerkleHasher,
  index: bigint,
  size: bigint,
  leafHash: Uint8Array,
  proof: Uint8Array[],
): { ok: true; root: Uint8Array } | { ok: false; reason: string } {
  if (!inU64(index, size)) return { ok: false, reason: "index or size outside uint64" };
  if (index >= size) return { ok: false, reason: `index ${index} is not below size ${size}` };
  if (leafHash.length !== HASH_SIZE) return { ok: false, reason: "leaf hash is not 32 bytes" };
  if (!hashesWellFormed(proof)) return { ok: false, reason: "a proof hash is not 32 bytes" };
  const { inner, border } = decompose(index, size);
  if (proof.length !== inner + border)
    return { ok: false, reason: `proof has ${proof.length} hashes, want ${inner + border}` };
  const res = chainInner(h, leafHash, proof.slice(0, inner), index);
  return { ok: true, root: chainBorderRight(h, res, proof.slice(inner)) };
}

export function verifyInclusion(
  h: MerkleHasher,
  index: bigint,
  size: bigint,
  leafHash: Uint8Array,
  proof: Uint8Array[],
  root: Uint8Array,
): ProofCheck {
  const r = rootFromInclusionProof(h, index, size, leafHash, proof);
  if (!r.ok) return r;
  return bytesEqual(r.root, root) ? { ok: true } : fail("the proof leads to a different root");
}

/** RFC 9162 2.1.4.2: the tree of size2 with root2 extends the tree of size1 with root1. */
export function verifyConsistency(
  h: MerkleHasher,
  size1: bigint,
  size2: bigint,
  proof: Uint8Array[],
  root1: Uint8Array,
  root2: Uint8Array,
): ProofCheck {
  if (!inU64(size1, size2)) return fail("size outside uint64");
  if (size2 < size1) return fail(`size2 ${size2} is below size1 ${size1}`);
  // Every tree extends the empty one, so such a "proof" proves nothing; like transparency-dev's
  // verifier we refuse it rather than let a caller believe it checked something.
  if (size1 === 0n) return fail("a consistency check from the empty tree proves nothing");
  if (size1 === size2) {
    if (proof.length > 0) return fail("equal sizes need an empty proof");
    return bytesEqual(root1, root2) ? { ok: true } : fail("equal sizes with different roots");
  }
  if (proof.length === 0) return fail("empty proof");
  if (!hashesWellFormed(proof)) return fail("a proof hash is not 32 bytes");
  const { inner: fullInner, border } = decompose(size1 - 1n, size2);
  const shift = trailingZeros(size1);
  const inner = fullInner - shift;
  // The proof starts with the hash of the subtree of size 2^shift, unless that is all of size1.
  const seedIsRoot1 = size1 === 1n << BigInt(shift);
  const seed = seedIsRoot1 ? root1 : (proof[0] as Uint8Array);
  const start = seedIsRoot1 ? 0 : 1;
  if (proof.length !== start + inner + border)
    return fail(`proof has ${proof.length} hashes, want ${start + inner + border}`);
  const rest = proof.slice(start);
  const mask = (size1 - 1n) >> BigInt(shift);
  const hash1 = chainBorderRight(h, chainInnerRight(h, seed, rest.slice(0, inner), mask), rest.slice(inner));
  if (!bytesEqual(hash1, root1)) return fail("the proof does not lead to the first root");
  const hash2 = chainBorderRight(h, chainInner(h, seed, rest.slice(0, inner), mask), rest.slice(inner));
  if (!bytesEqual(hash2, root2)) return fail("the proof does not lead to the second root");
  return { ok: true };
}
