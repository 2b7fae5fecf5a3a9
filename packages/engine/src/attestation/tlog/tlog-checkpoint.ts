// Signed checkpoints (C2SP tlog-checkpoint in a C2SP signed note, Ed25519): the workers' tlog
// checkpoint job calls signCheckpoint every second or so; GET /tlog/checkpoint serves the latest.
import { withTx, type Db, type DbOrTx } from "@kiln/db";
import { tlog } from "@kiln/domain";
import { logVerifierKey, type LogSigner } from "./tlog-key.ts";
import { tlogSize, treeRoot } from "./tlog-store.ts";

export interface StoredCheckpoint {
  size: number;
  rootHash: Uint8Array;
  /** The signed note, exactly as served. */
  note: string;
  createdAt: Date;
}

// Serialises signers across workers; the table's trigger refuses a smaller size regardless.
const CHECKPOINT_LOCK_KEY = 72_616_026;

/**
 * Signs a checkpoint of the committed log when it has grown past the latest one (and the empty
 * tree's when there is none yet, so a verifier key and a checkpoint exist from the start).
 * Idempotent: a second call with no new entries signs nothing.
 */
export async function signCheckpoint(db: Db, signer: LogSigner): Promise<{ created: boolean; size: number }> {
  return withTx(db, "tlog-sign-checkpoint", async (tx) => {
    await tx.$executeRaw`SELECT pg_advisory_xact_lock(${CHECKPOINT_LOCK_KEY})`;
    const size = await tlogSize(tx);
    const latest = await latestCheckpoint(tx);
    if (latest && latest.size >= size) return { created: false, size: latest.size };
    const rootHash = await treeRoot(tx, size);
    const body = tlog.formatCheckpoint({ origin: signer.origin, size, rootHash });
    const note = tlog.formatSignedNote(body, [
      { name: signer.origin, keyHash: signer.keyHash, signature: signer.sign(new TextEncoder().encode(body)) },
    ]);
    await tx.$executeRaw`
      INSERT INTO tlog_checkpoint (size, root_hash, note, key_hash)
      VALUES (${size}, ${Buffer.from(rootHash)}, ${note}, ${tlog.toHex(signer.keyHash)})`;
    return { created: true, size };
  });
}

export async function latestCheckpoint(db: DbOrTx): Promise<StoredCheckpoint | null> {
  const rows = await db.$queryRaw<{ size: bigint; root_hash: Uint8Array; note: string; created_at: Date }[]>`
    SELECT size, root_hash, note, created_at FROM tlog_checkpoint ORDER BY size DESC LIMIT 1`;
  const r = rows[0];
  return r
    ? { size: Number(r.size), rootHash: new Uint8Array(r.root_hash), note: r.note, createdAt: r.created_at }
    : null;
}

export interface TlogStatus {
  /** Entries committed to the log (the next checkpoint will cover them). */
  entries: number;
  checkpoint: { size: number; rootHash: Uint8Array; createdAt: Date; note: string } | null;
  verifierKey: string | null;
}

/** What the public transparency-log page shows; three primary-key reads. */
export async function tlogStatus(db: DbOrTx): Promise<TlogStatus> {
  const [entries, checkpoint, verifierKey] = await Promise.all([
    tlogSize(db),
    latestCheckpoint(db),
    logVerifierKey(db),
  ]);
  return { entries, checkpoint, verifierKey };
}
