// RFC 6962 / RFC 9162 section 2.1 hashing. The domain does no cryptography of its own (it may not
// import node:crypto): the caller passes SHA-256 in, and these functions only frame the input, so
// the one place that turns bytes into digests stays in the engine.

/** SHA-256 over the bytes, synchronously: node:crypto in the engine, anything equivalent in a test. */
export type Sha256 = (data: Uint8Array) => Uint8Array;

/** The three hashes of an RFC 6962 Merkle tree. */
export interface MerkleHasher {
  /** MTH({}) = SHA-256() : the root of the empty tree. */
  emptyRoot(): Uint8Array;
  /** SHA-256(0x00 || leaf bytes). */
  leaf(bytes: Uint8Array): Uint8Array;
  /** SHA-256(0x01 || left || right). */
  node(left: Uint8Array, right: Uint8Array): Uint8Array;
}

export const HASH_SIZE = 32;

export function merkleHasher(sha256: Sha256): MerkleHasher {
  return {
    emptyRoot: () => sha256(new Uint8Array(0)),
    leaf: (bytes) => {
      const b = new Uint8Array(bytes.length + 1);
      b[0] = 0x00;
      b.set(bytes, 1);
      return sha256(b);
    },
    node: (left, right) => {
      const b = new Uint8Array(left.length + right.length + 1);
      b[0] = 0x01;
      b.set(left, 1);
      b.set(right, 1 + left.length);
      return sha256(b);
    },
  };
}

export function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let d = 0;
  for (let i = 0; i < a.length; i++) d |= (a[i] ?? 0) ^ (b[i] ?? 0);
  return d === 0;
}
