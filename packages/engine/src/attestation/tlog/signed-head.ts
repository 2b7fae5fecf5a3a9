// The checkpoint signer's memory of what it last signed (issue 28, ADR 0026 "Amended (issue 28)").
// The log's tables are writable by whoever holds the web app's database role, which owns them and
// can drop their append-only triggers; if the signer trusted the tables, a rewritten history would
// get a valid signature. So the signer keeps its last signed head (size, root) in a file beside
// its key-encryption key, outside the database, and signs a new tree only with a consistency
// proof from that head: RFC 9162 2.1.4, the same check a witness makes.
import { mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import path from "node:path";
import { DomainError, tlog } from "@kiln/domain";

export interface SignedHead {
  origin: string;
  /** Hex of the note key hash that signed it: a new key in the tables is a new log, refused too. */
  keyHash: string;
  size: number;
  rootHash: Uint8Array;
}

interface HeadFile {
  origin: string;
  key_hash: string;
  size: number;
  root_hash: string;
  signed_at: string;
}

/** The head this signer last signed, or null when the file does not exist yet. */
export function readSignedHead(file: string): SignedHead | null {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw e;
  }
  const j = JSON.parse(text) as Partial<HeadFile>;
  const root = typeof j.root_hash === "string" ? tlog.fromBase64(j.root_hash) : null;
  if (
    typeof j.origin !== "string" ||
    typeof j.key_hash !== "string" ||
    !Number.isSafeInteger(j.size) ||
    (j.size ?? -1) < 0 ||
    root?.length !== 32
  )
    // A damaged head must stop signing, not restart trust from whatever the tables say.
    throw new DomainError("TLOG.HISTORY_REWRITTEN", `the signer's head file ${file} is damaged; restore it`);
  return { origin: j.origin, keyHash: j.key_hash, size: j.size as number, rootHash: root };
}

/**
 * Remembers a head once its checkpoint has committed (a head remembered before the commit could
 * name a tree the database never kept). Never moves back: signers racing on one host may finish
 * out of order, and an older head only weakens the next check, a newer one is what was signed.
 */
export function writeSignedHead(file: string, head: SignedHead, at: Date): void {
  const prev = readSignedHead(file);
  if (prev && prev.origin === head.origin && prev.keyHash === head.keyHash && prev.size >= head.size) return;
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const body: HeadFile = {
    origin: head.origin,
    key_hash: head.keyHash,
    size: head.size,
    root_hash: tlog.toBase64(head.rootHash),
    signed_at: at.toISOString(),
  };
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(body)}\n`, { mode: 0o600 });
  renameSync(tmp, file);
}
