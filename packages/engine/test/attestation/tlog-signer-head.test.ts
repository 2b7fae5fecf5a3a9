// Issue 28 (B), from the attacker's side: whoever holds the web app's database role owns the log's
// tables and can switch their append-only triggers off. The checkpoint signer must not sign the
// history they write: it keeps its last signed head outside the database and signs only a tree
// with a consistency proof from it.
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { createDb, withTx, type Db } from "@kiln/db";
import { describe, expect, it } from "vitest";
import { latestCheckpoint, signCheckpoint } from "../../src/attestation/tlog/tlog-checkpoint.ts";
import { logSigner } from "../../src/attestation/tlog/tlog-key.ts";
import { appendTlogEntry, treeRoot } from "../../src/attestation/tlog/tlog-store.ts";
import { useTestDb } from "../support.ts";

const t = useTestDb();
const ORIGIN = "kiln.example/tlog";
const kek = new Uint8Array(randomBytes(32));
const headFile = path.join(mkdtempSync(path.join(tmpdir(), "kiln-signed-head-")), "keys/tlog-signed-head.json");
const LOG_TABLES = ["tlog_entry", "tlog_node", "tlog_checkpoint", "tlog_sequencer", "tlog_key"];

async function append(db: Db, texts: string[]): Promise<void> {
  for (const x of texts)
    await withTx(db, "t", (tx) =>
      appendTlogEntry(tx, { kind: "test", bytes: new TextEncoder().encode(x), dedupeKey: x }),
    );
}

/** The attacker: triggers off, the log's history (and its checkpoints) replaced, triggers back on. */
async function rewriteHistory(db: Db, texts: string[], opts: { dropKey?: boolean } = {}): Promise<void> {
  for (const tbl of LOG_TABLES) await db.$executeRawUnsafe(`ALTER TABLE ${tbl} DISABLE TRIGGER USER`);
  await db.$executeRawUnsafe("DELETE FROM tlog_checkpoint");
  await db.$executeRawUnsafe("DELETE FROM tlog_node");
  await db.$executeRawUnsafe("DELETE FROM tlog_entry");
  await db.$executeRawUnsafe("UPDATE tlog_sequencer SET size = 0");
  if (opts.dropKey) await db.$executeRawUnsafe("DELETE FROM tlog_key");
  for (const tbl of LOG_TABLES) await db.$executeRawUnsafe(`ALTER TABLE ${tbl} ENABLE TRIGGER USER`);
  await append(db, texts);
}

const checkpointCount = async (db: Db) =>
  (await db.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM tlog_checkpoint`)[0]!.n;

describe("the checkpoint signer refuses a rewritten log", () => {
  it("signs honest growth with a consistency proof from its head file, kept outside the database", async () => {
    const signer = await logSigner(t.db(), { origin: ORIGIN, kek });
    expect(await signCheckpoint(t.db(), signer, { headFile })).toEqual({ created: true, size: 0 });
    await append(t.db(), ["a", "b", "c", "d"]);
    expect(await signCheckpoint(t.db(), signer, { headFile })).toEqual({ created: true, size: 4 });
    await append(t.db(), ["e", "f", "g"]);
    expect(await signCheckpoint(t.db(), signer, { headFile })).toEqual({ created: true, size: 7 });
    const head = JSON.parse(readFileSync(headFile, "utf8")) as { size: number; root_hash: string };
    expect(head.size).toBe(7);
    expect(head.root_hash).toBe(Buffer.from(await treeRoot(t.db(), 7)).toString("base64"));
  });

  it("a longer rewritten history gets no signature (no consistency proof from the signed head)", async () => {
    const signer = await logSigner(t.db(), { origin: ORIGIN, kek });
    await rewriteHistory(t.db(), ["a", "b", "c", "EVIL", "e", "f", "g", "h", "i"]);
    await expect(signCheckpoint(t.db(), signer, { headFile })).rejects.toMatchObject({
      code: "TLOG.HISTORY_REWRITTEN",
      message: expect.stringContaining("does not extend the tree of 7"),
    });
    expect(await checkpointCount(t.db())).toBe(0);
    expect(await latestCheckpoint(t.db())).toBeNull();
  });

  it("a shorter or same-size rewrite is refused too, and so is a fresh key planted in the tables", async () => {
    const signer = await logSigner(t.db(), { origin: ORIGIN, kek });
    await rewriteHistory(t.db(), ["x", "y"]);
    await expect(signCheckpoint(t.db(), signer, { headFile })).rejects.toMatchObject({
      code: "TLOG.HISTORY_REWRITTEN",
      message: expect.stringContaining("already signed a tree of 7"),
    });
    await rewriteHistory(t.db(), ["a", "b", "c", "d", "e", "f", "EVIL"]);
    await expect(signCheckpoint(t.db(), signer, { headFile })).rejects.toMatchObject({
      code: "TLOG.HISTORY_REWRITTEN",
    });
    // Dropping the key makes the next worker generate a new one: a new log, which the head refuses.
    await rewriteHistory(t.db(), ["a", "b", "c", "d", "e", "f", "g", "h"], { dropKey: true });
    const fresh = createDb({ url: t.url(), max: 1 });
    try {
      const newKey = await logSigner(fresh, { origin: ORIGIN, kek });
      expect(newKey.publicKey).not.toEqual(signer.publicKey);
      await expect(signCheckpoint(fresh, newKey, { headFile })).rejects.toMatchObject({
        code: "TLOG.HISTORY_REWRITTEN",
        message: expect.stringContaining("remove it only if the log was reset on purpose"),
      });
    } finally {
      await fresh.$disconnect();
    }
    expect(await checkpointCount(t.db())).toBe(0);
    expect(JSON.parse(readFileSync(headFile, "utf8"))).toMatchObject({ size: 7 });
  });

  it("a damaged head file stops signing instead of restarting trust from the tables", async () => {
    const signer = await logSigner(t.db(), { origin: ORIGIN, kek });
    const damaged = path.join(path.dirname(headFile), "damaged.json");
    writeFileSync(damaged, JSON.stringify({ origin: ORIGIN, size: 3 }));
    await expect(signCheckpoint(t.db(), signer, { headFile: damaged })).rejects.toMatchObject({
      code: "TLOG.HISTORY_REWRITTEN",
    });
    expect(existsSync(headFile)).toBe(true);
  });
});
