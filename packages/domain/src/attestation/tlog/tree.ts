// Proof generation as data: which subtrees an RFC 6962 inclusion or consistency proof is made of,
// and which stored perfect nodes each subtree's hash folds from. The engine fetches exactly those
// nodes (one query) and folds them here, so a proof costs O(log^2 n) stored hashes and no rehash of
// the log. Sizes and indices are plain numbers: a Kiln log stays far below 2^53 entries; the
// verifiers (verify.ts) take bigint because they check other logs' proofs too.
import type { MerkleHasher } from "./hash.ts";

/** The leaves [start, end) of a subtree of an RFC 6962 tree. */
export interface LeafRange {
  start: number;
  end: number;
}

/** A perfect subtree: 2^level leaves starting at index * 2^level (level 0 = a leaf hash). */
export interface NodeId {
  level: number;
  index: number;
}

/** The largest power of two strictly below n (n >= 2), RFC 6962's k. */
export function splitPoint(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

function checkSize(name: string, v: number): void {
  if (!Number.isSafeInteger(v) || v < 0) throw new RangeError(`${name} must be a non-negative safe integer`);
}

/** RFC 6962 2.1.1 PATH(m, D[0:n]) as the subtrees whose hashes form the proof, leaf first. */
export function inclusionRanges(index: number, size: number): LeafRange[] {
  checkSize("index", index);
  checkSize("size", size);
  if (index >= size) throw new RangeError(`index ${index} is not below size ${size}`);
  const out: LeafRange[] = [];
  const walk = (m: number, lo: number, hi: number): void => {
    const n = hi - lo;
    if (n <= 1) return;
    const k = splitPoint(n);
    if (m < k) {
      walk(m, lo, lo + k);
      out.push({ start: lo + k, end: hi });
    } else {
      walk(m - k, lo + k, hi);
      out.push({ start: lo, end: lo + k });
    }
  };
  walk(index, 0, size);
  return out;
}

/** RFC 6962 2.1.2 PROOF(m, D[n]) = SUBPROOF(m, D[n], true) as subtrees, 0 < m <= n; empty when m = n. */
export function consistencyRanges(from: number, to: number): LeafRange[] {
  checkSize("from", from);
  checkSize("to", to);
  if (from === 0 || from > to) throw new RangeError(`no consistency proof from ${from} to ${to}`);
  if (from === to) return [];
  const out: LeafRange[] = [];
  const sub = (m: number, lo: number, hi: number, whole: boolean): void => {
    const n = hi - lo;
    if (m === n) {
      if (!whole) out.push({ start: lo, end: hi });
      return;
    }
    const k = splitPoint(n);
    if (m <= k) {
      sub(m, lo, lo + k, whole);
      out.push({ start: lo + k, end: hi });
    } else {
      sub(m - k, lo + k, hi, false);
      out.push({ start: lo, end: lo + k });
    }
  };
  sub(from, 0, to, true);
  return out;
}

/**
 * The perfect subtrees a range of an RFC 6962 tree is built from, left to right (largest first).
 * Every range the proofs above produce starts at a multiple of the power of two above its length,
 * so this is the binary expansion of its length.
 */
export function rangeNodes(r: LeafRange): NodeId[] {
  if (r.end <= r.start) throw new RangeError("empty range");
  const out: NodeId[] = [];
  let at = r.start;
  while (at < r.end) {
    let level = 0;
    // The largest aligned perfect subtree starting at `at` that fits in the range.
    while (at % 2 ** (level + 1) === 0 && at + 2 ** (level + 1) <= r.end) level++;
    out.push({ level, index: at / 2 ** level });
    at += 2 ** level;
  }
  return out;
}

/** MTH of a range from its perfect nodes' hashes (rangeNodes order): a right fold, RFC 6962's shape. */
export function foldNodes(h: MerkleHasher, hashes: Uint8Array[]): Uint8Array {
  const last = hashes[hashes.length - 1];
  if (!last) throw new RangeError("no hashes to fold");
  let acc = last;
  for (let i = hashes.length - 2; i >= 0; i--) acc = h.node(hashes[i] as Uint8Array, acc);
  return acc;
}

/** The root of a tree of `size` leaves is the range [0, size); the empty tree's is SHA-256(). */
export function rootNodes(size: number): NodeId[] {
  return size === 0 ? [] : rangeNodes({ start: 0, end: size });
}

/**
 * The perfect nodes appending leaf `index` completes, bottom up, with the left sibling each one
 * needs: leaf i closes one level for each trailing 1 bit of i.
 */
export function nodesCompletedBy(index: number): { node: NodeId; left: NodeId; right: NodeId }[] {
  checkSize("index", index);
  const out: { node: NodeId; left: NodeId; right: NodeId }[] = [];
  let i = index;
  let level = 0;
  while (i % 2 === 1) {
    out.push({
      node: { level: level + 1, index: (i - 1) / 2 },
      left: { level, index: i - 1 },
      right: { level, index: i },
    });
    i = (i - 1) / 2;
    level++;
  }
  return out;
}

/** Any range's hash straight from its leaf hashes (tests, and small in-memory trees). */
export function rangeHashFromLeaves(h: MerkleHasher, leaves: Uint8Array[], r: LeafRange): Uint8Array {
  const n = r.end - r.start;
  if (n === 1) return leaves[r.start] as Uint8Array;
  const k = splitPoint(n);
  return h.node(
    rangeHashFromLeaves(h, leaves, { start: r.start, end: r.start + k }),
    rangeHashFromLeaves(h, leaves, { start: r.start + k, end: r.end }),
  );
}

export function rootFromLeaves(h: MerkleHasher, leaves: Uint8Array[]): Uint8Array {
  return leaves.length === 0 ? h.emptyRoot() : rangeHashFromLeaves(h, leaves, { start: 0, end: leaves.length });
}
