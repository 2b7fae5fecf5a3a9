// The transparency log (issue 17, docs/adr/0026-transparency-log.md).
export {
  appendTlogEntry,
  appendTlogEntries,
  entryProblem,
  getTlogEntry,
  getInclusionProof,
  getConsistencyProof,
  treeRoot,
  tlogSize,
  readTile,
  MAX_ENTRY_BYTES,
  type AppendInput,
  type AppendResult,
  type TlogEntry,
  type TlogConn,
} from "./tlog-store.ts";
export {
  signCheckpoint,
  latestCheckpoint,
  tlogStatus,
  type StoredCheckpoint,
  type TlogStatus,
} from "./tlog-checkpoint.ts";
export { logSigner, logVerifierKey, loadKeyEncryptionKey, kekId, tlogOrigin, type LogSigner } from "./tlog-key.ts";
export {
  sha256,
  tlogHasher,
  ed25519Verify,
  ed25519Sign,
  noteVerifier,
  openCheckpoint,
  type OpenedCheckpoint,
} from "./tlog-crypto.ts";
