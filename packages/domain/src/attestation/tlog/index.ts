// The transparency log's pure parts (issue 17, docs/adr/0026): RFC 6962 hashing and proofs, C2SP
// checkpoints, signed notes and tile paths. SHA-256 and Ed25519 are passed in; @kiln/engine binds
// them to node:crypto (tlogHasher, openCheckpoint).
export { merkleHasher, bytesEqual, HASH_SIZE, type MerkleHasher, type Sha256 } from "./hash.ts";
export { toBase64, fromBase64, toHex, fromHex, concatBytes } from "./bytes.ts";
export {
  inclusionRanges,
  consistencyRanges,
  rangeNodes,
  rootNodes,
  foldNodes,
  nodesCompletedBy,
  rangeHashFromLeaves,
  rootFromLeaves,
  splitPoint,
  type LeafRange,
  type NodeId,
} from "./tree.ts";
export { verifyInclusion, verifyConsistency, rootFromInclusionProof, type ProofCheck } from "./verify.ts";
export { formatCheckpoint, parseCheckpoint, type Checkpoint, type CheckpointParse } from "./checkpoint.ts";
export {
  ED25519_ALGORITHM,
  noteKeyHash,
  validKeyName,
  formatVerifierKey,
  parseVerifierKey,
  formatSignedNote,
  formatSignatureLine,
  parseSignedNote,
  openSignedNote,
  type NoteSignature,
  type NoteVerifier,
  type VerifierKey,
  type OpenedNote,
  type Parsed,
} from "./note.ts";
export {
  TILE_HEIGHT,
  TILE_WIDTH,
  encodeTileIndex,
  tilePath,
  parseTilePath,
  encodeEntryBundle,
  decodeEntryBundle,
  tileWidthAt,
  type TileRef,
} from "./tiles.ts";
