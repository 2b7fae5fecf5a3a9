import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { createDb, withTx } from "@kiln/db";
import { tlog } from "@kiln/domain";
import { describe, expect, it } from "vitest";
import { latestCheckpoint, signCheckpoint } from "../../src/attestation/tlog/tlog-checkpoint.ts";
import { ed25519Sign, openCheckpoint, sha256, tlogHasher } from "../../src/attestation/tlog/tlog-crypto.ts";
import { loadKeyEncryptionKey, logSigner, logVerifierKey } from "../../src/attestation/tlog/tlog-key.ts";
import { appendTlogEntry, treeRoot } from "../../src/attestation/tlog/tlog-store.ts";
import { useTestDb } from "../support.ts";

const t = useTestDb();
const ORIGIN = "kiln.example/tlog";
const kek = new Uint8Array(randomBytes(32));
const head = { headFile: path.join(mkdtempSync(path.join(tmpdir(), "kiln-head-")), "tlog-signed-head.json") };

describe("checkpoints and the log key", () => {
  it("has no verifier key or checkpoint before the first signing, then the empty tree's", async () => {
    expect(await logVerifierKey(t.db())).toBeNull();
    expect(await latestCheckpoint(t.db())).toBeNull();
    const signer = await logSigner(t.db(), { origin: ORIGIN, kek });
    expect(await signCheckpoint(t.db(), signer, head)).toEqual({ created: true, size: 0 });
    const cp = await latestCheckpoint(t.db());
    const vk = await logVerifierKey(t.db());
    const opened = openCheckpoint(cp!.note, vk!);
    expect(opened).toMatchObject({ ok: true, checkpoint: { origin: ORIGIN, size: 0n } });
    expect(cp!.rootHash).toEqual(tlogHasher.emptyRoot());
  });

  it("signs a new checkpoint only when the log grew (run it twice: the second signs nothing)", async () => {
    const signer = await logSigner(t.db(), { origin: ORIGIN, kek });
    for (let i = 0; i < 5; i++)
      await withTx(t.db(), "t", (tx) =>
        appendTlogEntry(tx, { kind: "test", bytes: new TextEncoder().encode(`e${i}`), dedupeKey: `e${i}` }),
      );
    expect(await signCheckpoint(t.db(), signer, head)).toEqual({ created: true, size: 5 });
    expect(await signCheckpoint(t.db(), signer, head)).toEqual({ created: false, size: 5 });
    const [a, b] = await Promise.all([signCheckpoint(t.db(), signer, head), signCheckpoint(t.db(), signer, head)]);
    expect([a.created, b.created]).toEqual([false, false]);
    const cp = (await latestCheckpoint(t.db()))!;
    const opened = openCheckpoint(cp.note, (await logVerifierKey(t.db()))!);
    if (!opened.ok) throw new Error(opened.reason);
    expect(opened.checkpoint.rootHash).toEqual(await treeRoot(t.db(), 5));
    const count = await t.db().$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM tlog_checkpoint`;
    expect(count[0]!.n).toBe(2);
  });

  it("a flipped bit in the note, another key, or another origin is refused by the verifier", async () => {
    const cp = (await latestCheckpoint(t.db()))!;
    const vk = (await logVerifierKey(t.db()))!;
    const tampered = cp.note.replace(/\n5\n/, "\n6\n");
    expect(openCheckpoint(tampered, vk)).toMatchObject({ ok: false, rule: "TLOG.CHECKPOINT_SIGNATURE" });
    const sig = cp.note.split("\n\n")[1]!;
    const flipped = cp.note.replace(
      sig,
      sig.replace(/[A-Za-z](?=[^ ]*\n$)/, (c) => (c === "A" ? "B" : "A")),
    );
    expect(openCheckpoint(flipped, vk).ok).toBe(false);
    const otherKey = tlog.formatVerifierKey(sha256, ORIGIN, new Uint8Array(32).fill(9));
    expect(openCheckpoint(cp.note, otherKey)).toMatchObject({ ok: false, rule: "TLOG.CHECKPOINT_SIGNATURE" });
  });

  it("the database refuses a checkpoint of a smaller size, beyond the log, or any change", async () => {
    const db = t.db();
    await expect(
      db.$executeRaw`INSERT INTO tlog_checkpoint (size, root_hash, note, key_hash) VALUES (3, sha256(''), 'x', 'x')`,
    ).rejects.toThrow(/never decrease/);
    await expect(
      db.$executeRaw`INSERT INTO tlog_checkpoint (size, root_hash, note, key_hash) VALUES (99, sha256(''), 'x', 'x')`,
    ).rejects.toThrow(/beyond the log/);
    await expect(db.$executeRaw`DELETE FROM tlog_checkpoint`).rejects.toThrow(/append-only/);
    await expect(db.$executeRaw`UPDATE tlog_key SET origin = 'evil.example/tlog'`).rejects.toThrow(/append-only/);
  });

  it("keeps the private key sealed: the database holds no raw key, another KEK or origin is refused", async () => {
    const signer = await logSigner(t.db(), { origin: ORIGIN, kek });
    const rows = await t.db().$queryRaw<{ sealed_private_key: Uint8Array }[]>`SELECT sealed_private_key FROM tlog_key`;
    expect(rows).toHaveLength(1);
    // The sealed blob is iv || ciphertext || tag and signing with it as a seed does not give the key's signatures.
    expect(rows[0]!.sealed_private_key.length).toBe(12 + 32 + 16);
    const other = ed25519Sign(new Uint8Array(rows[0]!.sealed_private_key).slice(12, 44), new Uint8Array([1]));
    expect(other).not.toEqual(signer.sign(new Uint8Array([1])));
    const fresh = createDb({ url: t.url(), max: 1 });
    try {
      await expect(logSigner(fresh, { origin: ORIGIN, kek: new Uint8Array(randomBytes(32)) })).rejects.toMatchObject({
        code: "TLOG.KEY_UNAVAILABLE",
      });
      await expect(logSigner(fresh, { origin: "elsewhere.example/tlog", kek })).rejects.toMatchObject({
        code: "TLOG.ORIGIN_CHANGED",
      });
      expect((await logSigner(fresh, { origin: ORIGIN, kek })).publicKey).toEqual(signer.publicKey);
    } finally {
      await fresh.$disconnect();
    }
  });

  it("creates the key-encryption key file once, mode 0600, and reads the same key after", () => {
    const dir = mkdtempSync(path.join(tmpdir(), "kek-"));
    const file = path.join(dir, "keys/tlog-kek");
    const a = loadKeyEncryptionKey({ file });
    const b = loadKeyEncryptionKey({ file });
    expect(a).toEqual(b);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(Buffer.from(readFileSync(file, "utf8"), "base64")).toHaveLength(32);
    expect(() => loadKeyEncryptionKey({ base64: "c2hvcnQ=", file })).toThrow(/32 bytes/);
  });
});
