// The transparency log as the attestor uses it (issue 17; the log itself is packages/engine/src/tlog,
// ADR 0026). One port, so the attestor's use cases name the four operations they need and nothing else.
import type { Db, SqlClient, Tx } from "@kiln/db";

export interface TlogInclusion {
  index: bigint;
  treeSize: bigint;
  /** Base64 hashes, RFC 6962/9162 order. */
  hashes: string[];
  /** The C2SP signed note the proof's root is taken from. */
  checkpoint: string;
  rootHash: string;
}

export interface TlogAppend {
  kind: string;
  bytes: Uint8Array;
  dedupeKey: string;
}

export interface TlogPort {
  /**
   * Appends inside the caller's transaction, in order, under one sequencer lock; one leaf per
   * dedupeKey however often it is called. Indices in input order.
   */
  append(tx: Tx | SqlClient, entries: TlogAppend[]): Promise<{ index: bigint }[]>;
  /** Why the log would refuse this entry (size, kind, key), or null. */
  entryProblem(e: TlogAppend): string | null;
  /** The leaf bytes GET /v1/tlog/entries/{index} serves; null when not (yet) in the log. */
  entry(db: Db, index: bigint): Promise<Uint8Array | null>;
  /** Inclusion of `index` in the latest checkpoint; null until a checkpoint covers it. */
  inclusionInLatest(db: Db, index: bigint): Promise<TlogInclusion | null>;
  /** The log's note verifier key (`<origin>+<hex key id>+<base64(0x01 || key)>`). */
  verifierKey(db: Db): Promise<string>;
  /** Pure checks, so verifying sides share the log's own rules (RFC 6962 leaf hash, proofs, notes). */
  leafHash(bytes: Uint8Array): Uint8Array;
  verifyInclusion(leafHash: Uint8Array, p: Omit<TlogInclusion, "checkpoint">): boolean;
  verifyCheckpoint(note: string, verifierKey: string): { size: bigint; rootHash: string } | null;
}
