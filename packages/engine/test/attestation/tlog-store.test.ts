import { randomBytes } from "node:crypto";
import { sqlPool, withTx } from "@kiln/db";
import { tlog } from "@kiln/domain";
import { describe, expect, it } from "vitest";
import {
  appendTlogEntries,
  appendTlogEntry,
  getConsistencyProof,
  getInclusionProof,
  getTlogEntry,
  readTile,
  tlogSize,
  treeRoot,
} from "../../src/attestation/tlog/tlog-store.ts";
import { tlogHasher } from "../../src/attestation/tlog/tlog-crypto.ts";
import { useTestDb } from "../support.ts";

const t = useTestDb();
const enc = new TextEncoder();
const entry = (i: number) => enc.encode(`{"statement":${i}}`);

async function append(i: number, key = `k${i}`) {
  return withTx(t.db(), "test-append", (tx) => appendTlogEntry(tx, { kind: "test", bytes: entry(i), dedupeKey: key }));
}

describe("transparency log storage", () => {
  const leaves: Uint8Array[] = [];

  it("appends densely, one leaf per dedupe key, and a replay returns the first index", async () => {
    for (let i = 0; i < 20; i++) {
      const r = await append(i);
      expect(r).toEqual({ index: i, created: true, sameBytes: true });
      leaves.push(tlogHasher.leaf(entry(i)));
    }
    expect(await append(3)).toEqual({ index: 3, created: false, sameBytes: true });
    const other = await withTx(t.db(), "t", (tx) =>
      appendTlogEntry(tx, { kind: "test", bytes: enc.encode("different"), dedupeKey: "k3" }),
    );
    expect(other).toEqual({ index: 3, created: false, sameBytes: false });
    expect(await tlogSize(t.db())).toBe(20);
    const e = await getTlogEntry(t.db(), 7);
    expect(Buffer.from(e.bytes).toString()).toBe('{"statement":7}');
    expect(e.leafHash).toEqual(leaves[7]);
  });

  it("keeps indices dense and each key once under concurrent appends and replays (pg-boss redelivery)", async () => {
    const keys = Array.from({ length: 60 }, (_, i) => `c${i % 30}`);
    const rs = await Promise.all(
      keys.map((k, j) =>
        withTx(t.db(), "concurrent", (tx) =>
          appendTlogEntry(tx, { kind: "test", bytes: enc.encode(`concurrent ${k}`), dedupeKey: k }),
        ).then((r) => ({ k, j, ...r })),
      ),
    );
    const byKey = new Map<string, Set<number>>();
    for (const r of rs) byKey.set(r.k, (byKey.get(r.k) ?? new Set()).add(r.index));
    expect([...byKey.values()].every((s) => s.size === 1)).toBe(true);
    const indices = [...byKey.values()].map((s) => [...s][0]!).sort((a, b) => a - b);
    expect(indices).toEqual(Array.from({ length: 30 }, (_, i) => 20 + i));
    expect(rs.filter((r) => r.created)).toHaveLength(30);
    for (const i of indices) leaves.push((await getTlogEntry(t.db(), i)).leafHash);
    expect(await tlogSize(t.db())).toBe(50);
  });

  it("appends through a plain node-postgres transaction too (the hot-path driver), with the same dedupe", async () => {
    const pool = sqlPool(t.db());
    const r = await withTx(pool, "pg-append", (c) =>
      appendTlogEntry(c, { kind: "test", bytes: enc.encode("via pg"), dedupeKey: "via-pg" }),
    );
    expect(r).toEqual({ index: 50, created: true, sameBytes: true });
    const again = await withTx(pool, "pg-append", (c) =>
      appendTlogEntry(c, { kind: "test", bytes: enc.encode("via pg"), dedupeKey: "via-pg" }),
    );
    expect(again).toEqual({ index: 50, created: false, sameBytes: true });
    leaves.push(tlogHasher.leaf(enc.encode("via pg")));
  });

  it("a rolled-back append leaves no gap", async () => {
    await expect(
      withTx(t.db(), "rollback", async (tx) => {
        await appendTlogEntry(tx, { kind: "test", bytes: enc.encode("never"), dedupeKey: "never" });
        throw new Error("caller failed after appending");
      }),
    ).rejects.toThrow("caller failed");
    const r = await append(1000);
    expect(r.index).toBe(51);
    leaves.push(tlogHasher.leaf(entry(1000)));
  });

  it("appends a batch in order under one lock: dense, and a key repeated or replayed keeps its first index", async () => {
    const pool = sqlPool(t.db());
    const n = await tlogSize(t.db());
    const e = (k: string) => ({ kind: "test", bytes: enc.encode(`batch ${k}`), dedupeKey: k });
    const made = (index: number) => ({ index, created: true, sameBytes: true });
    const found = (index: number) => ({ index, created: false, sameBytes: true });
    const rs = await withTx(pool, "batch", (c) => appendTlogEntries(c, [e("b0"), e("b1"), e("b0"), e("b2")]));
    expect(rs).toEqual([made(n), made(n + 1), found(n), made(n + 2)]);
    // Through Prisma as well: a replayed key and a new one in one batch.
    const rs2 = await withTx(t.db(), "batch", (tx) => appendTlogEntries(tx, [e("b1"), e("b3")]));
    expect(rs2).toEqual([found(n + 1), made(n + 3)]);
    // One invalid entry refuses the whole batch; nothing of it is appended.
    await expect(
      withTx(pool, "batch", (c) =>
        appendTlogEntries(c, [e("b4"), { kind: "test", bytes: randomBytes(65_536), dedupeKey: "b5" }]),
      ),
    ).rejects.toMatchObject({ code: "TLOG.ENTRY_INVALID" });
    expect(await tlogSize(t.db())).toBe(n + 4);
    for (const k of ["b0", "b1", "b2", "b3"]) leaves.push(tlogHasher.leaf(enc.encode(`batch ${k}`)));
  });

  it("serves roots and proofs from stored nodes that the RFC 9162 verifier accepts", async () => {
    const n = leaves.length;
    for (let size = 0; size <= n; size++) {
      const root = await treeRoot(t.db(), size);
      expect(root).toEqual(tlog.rootFromLeaves(tlogHasher, leaves.slice(0, size)));
    }
    const root = await treeRoot(t.db(), n);
    for (let i = 0; i < n; i++) {
      const proof = await getInclusionProof(t.db(), i, n);
      expect(tlog.verifyInclusion(tlogHasher, BigInt(i), BigInt(n), leaves[i]!, proof, root)).toEqual({ ok: true });
    }
    for (const [from, to] of [
      [1, n],
      [7, 13],
      [16, 32],
      [31, n],
      [n, n],
    ] as const) {
      const proof = await getConsistencyProof(t.db(), from, to);
      const r1 = await treeRoot(t.db(), from);
      const r2 = await treeRoot(t.db(), to);
      expect(tlog.verifyConsistency(tlogHasher, BigInt(from), BigInt(to), proof, r1, r2)).toEqual({ ok: true });
    }
  });

  it("refuses proofs beyond the log and bad indices with named codes", async () => {
    const n = await tlogSize(t.db());
    await expect(getInclusionProof(t.db(), 0, n + 1)).rejects.toMatchObject({ code: "TLOG.SIZE_BEYOND_LOG" });
    await expect(getInclusionProof(t.db(), n, n)).rejects.toMatchObject({ code: "TLOG.INDEX_OUT_OF_RANGE" });
    await expect(getConsistencyProof(t.db(), 5, 4)).rejects.toMatchObject({ code: "TLOG.INDEX_OUT_OF_RANGE" });
    await expect(getConsistencyProof(t.db(), 0, 4)).rejects.toMatchObject({ code: "TLOG.INDEX_OUT_OF_RANGE" });
    await expect(getTlogEntry(t.db(), n)).rejects.toMatchObject({ code: "TLOG.ENTRY_NOT_FOUND" });
    await expect(getTlogEntry(t.db(), -1)).rejects.toMatchObject({ code: "REQUEST.INVALID" });
    await expect(
      withTx(t.db(), "t", (tx) => appendTlogEntry(tx, { kind: "test", bytes: randomBytes(65_536), dedupeKey: "big" })),
    ).rejects.toMatchObject({ code: "TLOG.ENTRY_INVALID" });
  });

  it("serves hash tiles and entry bundles only as wide as the log holds", async () => {
    const n = await tlogSize(t.db());
    const tile = await readTile(t.db(), { level: 0, index: 0, width: n });
    expect(tile).toEqual(tlog.concatBytes(...leaves));
    expect(await readTile(t.db(), { level: 0, index: 0, width: n + 1 })).toBeNull();
    expect(await readTile(t.db(), { level: 1, index: 0, width: 1 })).toBeNull();
    const bundle = await readTile(t.db(), { level: null, index: 0, width: 3 });
    expect(tlog.decodeEntryBundle(bundle!)?.map((b) => Buffer.from(b).toString())).toEqual(
      [0, 1, 2].map((i) => `{"statement":${i}}`),
    );
  });

  it("the database refuses UPDATE, DELETE and TRUNCATE of the log, and a sequencer that does not count by one", async () => {
    const db = t.db();
    for (const sql of [
      `UPDATE tlog_entry SET body = '\\x00' WHERE idx = 0`,
      `DELETE FROM tlog_entry WHERE idx = 0`,
      `TRUNCATE tlog_entry CASCADE`,
      `UPDATE tlog_node SET hash = sha256('x') WHERE level = 0 AND idx = 0`,
      `DELETE FROM tlog_node`,
      `UPDATE tlog_sequencer SET size = 3`,
      `UPDATE tlog_sequencer SET size = size + 2`,
      `DELETE FROM tlog_sequencer`,
      `INSERT INTO tlog_entry (idx, kind, dedupe_key, body) VALUES (0, 'x', 'dup-index', '\\x01')`,
    ])
      await expect(db.$executeRawUnsafe(sql), sql).rejects.toThrow(
        /append-only|counts up|duplicate key|tlog_entry_pkey/,
      );
    expect(await tlogSize(db)).toBe(leaves.length);
    expect((await getTlogEntry(db, 0)).leafHash).toEqual(leaves[0]);
  });
});
