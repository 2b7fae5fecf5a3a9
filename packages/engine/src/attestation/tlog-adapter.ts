// The attestor's port onto the transparency log (./tlog, ADR 0026): the one place that knows the
// log's own function names and number types.
import { DomainError, isDomainError, tlog, toBase64 } from "@kiln/domain";
import { appendTlogEntries, entryProblem, getInclusionProof, getTlogEntry } from "./tlog/tlog-store.ts";
import { latestCheckpoint } from "./tlog/tlog-checkpoint.ts";
import { logVerifierKey } from "./tlog/tlog-key.ts";
import { openCheckpoint, tlogHasher } from "./tlog/tlog-crypto.ts";
import type { TlogPort } from "./tlog-port.ts";

export const engineTlog: TlogPort = {
  async append(tx, entries) {
    const rs = await appendTlogEntries(tx, entries);
    // A replay under the same dedupe key with other bytes would leave the row naming a leaf that
    // is not its envelope; the attestor's lock makes that impossible, so it is a bug if seen.
    if (rs.some((r) => !r.created && !r.sameBytes)) throw new Error("tlog entry for an attestation holds other bytes");
    return rs.map((r) => ({ index: BigInt(r.index) }));
  },
  entryProblem,
  async entry(db, index) {
    try {
      return (await getTlogEntry(db, Number(index))).bytes;
    } catch (e) {
      if (isDomainError(e) && e.code === "TLOG.ENTRY_NOT_FOUND") return null;
      throw e;
    }
  },
  async inclusionInLatest(db, index) {
    const cp = await latestCheckpoint(db);
    if (!cp || BigInt(cp.size) <= index) return null;
    const hashes = await getInclusionProof(db, Number(index), cp.size);
    return {
      index,
      treeSize: BigInt(cp.size),
      hashes: hashes.map(toBase64),
      checkpoint: cp.note,
      rootHash: toBase64(cp.rootHash),
    };
  },
  async verifierKey(db) {
    const k = await logVerifierKey(db);
    if (!k) throw new DomainError("TLOG.KEY_UNAVAILABLE", "the log has no key yet");
    return k;
  },
  leafHash: (bytes) => tlogHasher.leaf(bytes),
  verifyInclusion(leafHash, p) {
    const root = tlog.fromBase64(p.rootHash);
    const proof = p.hashes.map((h) => tlog.fromBase64(h));
    if (!root || proof.some((h) => h === null)) return false;
    return tlog.verifyInclusion(tlogHasher, p.index, p.treeSize, leafHash, proof as Uint8Array[], root).ok;
  },
  verifyCheckpoint(note, verifierKey) {
    const o = openCheckpoint(note, verifierKey);
    return o.ok ? { size: o.checkpoint.size, rootHash: toBase64(o.checkpoint.rootHash) } : null;
  },
};
