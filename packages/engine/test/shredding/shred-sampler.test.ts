import { randomUUID } from "node:crypto";
import { copyFileSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { GetObjectCommand, PutObjectCommand } from "@aws-sdk/client-s3";
import { shredDueAt } from "@kiln/domain";
import { describe, expect, it } from "vitest";
import { appendLogChunks } from "../../src/logs/append-log-chunks.ts";
import { archiveLogs } from "../../src/logs/archive-logs.ts";
import { sealLog } from "../../src/logs/seal-log.ts";
import { generateKekText, KekSource } from "../../src/secrets/index.ts";
import {
  destroyDueKeys,
  listShredLeaks,
  logProbes,
  PlatformKeyStore,
  sampleDeletions,
  ShredLogCipher,
  type ShredKeyDeps,
} from "../../src/shredding/index.ts";
import { createObjectStore } from "../../src/storage/index.ts";
import { useTestDb } from "../support.ts";
import { ChunkCutter, claimedAttempt, LOG_CFG, useJournalPool, useLogStore } from "../logs/support.ts";

// The deletion sampler (issue 21, ADR 0037): after destruction every read path must fail; a leak
// injected on purpose (a plaintext copy left in the store, a key row and day key restored from a
// backup) must raise the org's alert, and the alert clears once the leak is gone.
const t = useTestDb();
const pool = useJournalPool(t.url);
const s3 = useLogStore();
const dir = mkdtempSync(path.join(tmpdir(), "kiln-shred-sampler-"));
writeFileSync(path.join(dir, "kek"), generateKekText(), { mode: 0o600 });
const keyDir = path.join(dir, "keys");
const backupDir = path.join(dir, "key-backup");
const none = { stdout: 0, stderr: 0 };

function client() {
  const h = s3.s3();
  return createObjectStore({
    endpoint: h.endpoint,
    region: h.region,
    accessKeyId: h.accessKeyId,
    secretAccessKey: h.secretAccessKey,
  });
}

async function getObject(key: string): Promise<Uint8Array | null> {
  try {
    const r = await client().send(new GetObjectCommand({ Bucket: s3.s3().bucket, Key: key }));
    return (await r.Body?.transformToByteArray()) ?? null;
  } catch (e) {
    if ((e as { name?: string }).name === "NoSuchKey") return null;
    throw e;
  }
}

describe("deletion sampler", () => {
  it("finds every path unreadable after destruction, alerts on injected leaks, and clears when fixed", async () => {
    let now = new Date();
    const deps = (): ShredKeyDeps => ({
      db: t.db(),
      keks: new KekSource(path.join(dir, "kek")),
      platformKeys: new PlatformKeyStore(keyDir),
    });
    const a = await claimedAttempt(t.db());
    const cut = new ChunkCutter();
    const chunks = Array.from({ length: 10 }, (_, i) =>
      cut.cut("stdout", `private-output ${i} `.repeat(600).slice(0, 8192)),
    );
    await appendLogChunks(pool(), LOG_CFG, a.writer, chunks);
    await sealLog(t.db(), a.writer, { nextSeq: cut.nextSeq, bytes: cut.bytes, dropped: none });
    await archiveLogs(pool(), s3.store(), LOG_CFG, { shred: new ShredLogCipher(deps(), undefined, () => now) });
    const [row] = await t.db().$queryRaw<
      {
        id: string;
        due_day: Date;
        org_id: string;
        day: Date;
        kind: string;
        class: string;
        window_days: number;
        wrapped: Uint8Array;
      }[]
    >`
      SELECT id::text, due_day, org_id::text, day, kind, class, window_days, wrapped FROM shred_data_key WHERE org_id = ${a.tenant.orgId}::uuid`;
    if (!row) throw new Error("no key");
    const dueDay = row.due_day.toISOString().slice(0, 10);
    // The "backup": a copy of the key dir and of the row, taken before the due day.
    mkdirSync(backupDir, { recursive: true });
    copyFileSync(path.join(keyDir, `${dueDay}.key`), path.join(backupDir, `${dueDay}.key`));

    const probes = () => logProbes({ keys: deps(), pool: pool(), store: s3.store(), getObject, clock: () => now });
    const round = (limit = 50) =>
      sampleDeletions({ db: t.db(), probes: probes() }, { roundId: randomUUID(), now, limit });
    // Nothing is sampled before it is deleted.
    expect((await round()).objects).toBe(0);

    now = shredDueAt(dueDay);
    await destroyDueKeys(deps(), now);
    const clean = await round();
    expect(clean.objects).toBeGreaterThan(0);
    expect(clean.probes).toBe(clean.objects * 3); // object GET, raw log, log stream
    expect(clean.leaks).toBe(0);
    expect(await listShredLeaks(t.db(), a.tenant.orgId)).toEqual([]);

    // Leak 1: a plaintext copy left at one segment's key.
    const segs = await t.db().$queryRaw<
      { object_key: string }[]
    >`SELECT object_key FROM shred_object WHERE org_id = ${a.tenant.orgId}::uuid ORDER BY object_key`;
    const victim = segs[0]?.object_key as string;
    const sealed = (await getObject(victim)) as Uint8Array;
    await client().send(
      new PutObjectCommand({ Bucket: s3.s3().bucket, Key: victim, Body: Buffer.from("private-output 0 in clear") }),
    );
    const leaky = await round();
    expect(leaky.leaks).toBe(1);
    const leaks = await listShredLeaks(t.db(), a.tenant.orgId);
    expect(leaks.map((l) => [l.object_key, l.path])).toEqual([[victim, "object_get"]]);
    expect(leaks[0]?.detail).toMatch(/stored in clear/);
    const audit = await t.db().$queryRaw<
      { n: bigint }[]
    >`SELECT count(*) AS n FROM audit_event WHERE kind = 'shred.leak_detected' AND subject = ${victim}`;
    expect(Number(audit[0]?.n)).toBe(1);

    // Fixed: the sealed bytes are back; the next round clears the alert.
    await client().send(new PutObjectCommand({ Bucket: s3.s3().bucket, Key: victim, Body: Buffer.from(sealed) }));
    expect((await round()).leaks).toBe(0);
    expect(await listShredLeaks(t.db(), a.tenant.orgId)).toEqual([]);

    // Leak 2: the key row and the day key restored from backups. The serving paths still refuse by
    // the clock, but the material opens the stored object again: the object GET probe says so.
    copyFileSync(path.join(backupDir, `${dueDay}.key`), path.join(keyDir, `${dueDay}.key`));
    await t.db().$executeRaw`
      INSERT INTO shred_data_key (id, org_id, day, kind, class, due_day, window_days, wrapped)
      VALUES (${row.id}::uuid, ${row.org_id}::uuid, ${row.day}, ${row.kind}, ${row.class}, ${row.due_day}, ${row.window_days}, ${row.wrapped})`;
    const restored = await round();
    expect(restored.leaks).toBe(restored.objects);
    const open = await listShredLeaks(t.db(), a.tenant.orgId);
    expect(new Set(open.map((l) => l.path))).toEqual(new Set(["object_get"]));
    expect(open.length).toBe(segs.length);
    expect(open[0]?.detail).toMatch(/key row and day key both exist/);
    // The destroyer's next run removes them again, and the alert clears.
    await destroyDueKeys(deps(), now);
    expect((await round()).leaks).toBe(0);
    expect(await listShredLeaks(t.db(), a.tenant.orgId)).toEqual([]);

    // A probe that breaks (not a refusal) fails the round: it must never pass for "unreadable".
    const broken = {
      path: "raw_log" as const,
      kinds: ["log" as const],
      probe: () => Promise.reject(new TypeError("bug")),
    };
    await expect(sampleDeletions({ db: t.db(), probes: [broken] }, { roundId: randomUUID(), now })).rejects.toThrow(
      "bug",
    );
  });
});
