// Signed checkpoints (C2SP tlog-checkpoint in a C2SP signed note, Ed25519): the workers' tlog
// checkpoint job calls signCheckpoint every second or so; GET /tlog/checkpoint serves the latest.
import { withTx, type Db, type DbOrTx } from "@kiln/db";
import { DomainError, tlog } from "@kiln/domain";
import { readSignedHead, writeSignedHead, type SignedHead } from "./signed-head.ts";
import { openCheckpoint, sha256, tlogHasher } from "./tlog-crypto.ts";
import { logVerifierKey, type LogSigner } from "./tlog-key.ts";
import { getConsistencyProof, tlogSize, treeRoot } from "./tlog-store.ts";

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
 *
 * Before signing, the tree must extend the head this signer last signed (`headFile`, outside the
 * database: signed-head.ts): a consistency proof from that head's size and root to the tree about
 * to be signed, checked here. A log whose tables were rewritten is refused (TLOG.HISTORY_REWRITTEN)
 * and nothing is signed. With no head file yet, the latest stored checkpoint that this signer's key
 * signed is taken as the head (first run after an upgrade), or nothing before the empty tree.
 */
export async function signCheckpoint(
  db: Db,
  signer: LogSigner,
  opts: { headFile: string },
): Promise<{ created: boolean; size: number }> {
  const r = await withTx(db, "tlog-sign-checkpoint", async (tx) => {
    await tx.$executeRaw`SELECT pg_advisory_xact_lock(${CHECKPOINT_LOCK_KEY})`;
    const size = await tlogSize(tx);
    const latest = await latestCheckpoint(tx);
    if (latest && latest.size >= size) return { created: false, size: latest.size, head: null };
    const rootHash = await treeRoot(tx, size);
    await checkExtendsHead(tx, signer, readSignedHead(opts.headFile) ?? headFromCheckpoint(signer, latest), {
      size,
      rootHash,
    });
    const body = tlog.formatCheckpoint({ origin: signer.origin, size, rootHash });
    const note = tlog.formatSignedNote(body, [
      { name: signer.origin, keyHash: signer.keyHash, signature: signer.sign(new TextEncoder().encode(body)) },
    ]);
    await tx.$executeRaw`
      INSERT INTO tlog_checkpoint (size, root_hash, note, key_hash)
      VALUES (${size}, ${Buffer.from(rootHash)}, ${note}, ${tlog.toHex(signer.keyHash)})`;
    return {
      created: true,
      size,
      head: { origin: signer.origin, keyHash: tlog.toHex(signer.keyHash), size, rootHash },
    };
  });
  if (r.head) writeSignedHead(opts.headFile, r.head, new Date());
  return { created: r.created, size: r.size };
}

/** A stored checkpoint as a head, only if this signer's own key signed it (the tables are not trusted). */
function headFromCheckpoint(signer: LogSigner, cp: StoredCheckpoint | null): SignedHead | null {
  if (!cp) return null;
  const opened = openCheckpoint(cp.note, tlog.formatVerifierKey(sha256, signer.origin, signer.publicKey));
  if (!opened.ok)
    throw new DomainError(
      "TLOG.HISTORY_REWRITTEN",
      `the latest stored checkpoint is not this signer's: ${opened.reason}`,
    );
  return {
    origin: signer.origin,
    keyHash: tlog.toHex(signer.keyHash),
    size: Number(opened.checkpoint.size),
    rootHash: opened.checkpoint.rootHash,
  };
}

async function checkExtendsHead(
  tx: DbOrTx,
  signer: LogSigner,
  head: SignedHead | null,
  next: { size: number; rootHash: Uint8Array },
): Promise<void> {
  if (!head) return;
  const refuse = (why: string) => {
    throw new DomainError(
      "TLOG.HISTORY_REWRITTEN",
      `refusing to sign a tree of ${next.size}: ${why}; the log's tables were changed outside tlog_append`,
    );
  };
  // A new key or origin in the tables is a new log: refused unless the operator removes the head
  // file (a database reset on purpose), so dropping tlog_key cannot restart trust from scratch.
  if (head.origin !== signer.origin || head.keyHash !== tlog.toHex(signer.keyHash))
    refuse(
      `the head file is of log ${head.origin} key ${head.keyHash} (remove it only if the log was reset on purpose)`,
    );
  if (next.size < head.size) refuse(`this signer already signed a tree of ${head.size}`);
  if (head.size === 0) return; // every tree extends the empty one
  const proof = next.size === head.size ? [] : await getConsistencyProof(tx, head.size, next.size);
  const ok = tlog.verifyConsistency(
    tlogHasher,
    BigInt(head.size),
    BigInt(next.size),
    proof,
    head.rootHash,
    next.rootHash,
  );
  if (!ok.ok) refuse(`it does not extend the tree of ${head.size} this signer signed (${ok.reason})`);
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
