import { mkdtempSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { GetObjectCommand } from "@aws-sdk/client-s3";
import { encodeLogCursor, isDomainError, planLogStream, shredDueAt } from "@kiln/domain";
import { describe, expect, it } from "vitest";
import { appendLogChunks } from "../../src/logs/append-log-chunks.ts";
import { archiveLogs } from "../../src/logs/archive-logs.ts";
import { authorizeLogRead } from "../../src/logs/authorize-log-read.ts";
import { openJobLog, type FollowRequest, type LogFollowerDeps } from "../../src/logs/log-follower.ts";
import { LogHeadCache } from "../../src/logs/log-head.ts";
import { LogArchiveReader } from "../../src/logs/log-segments.ts";
import { readLogChunks } from "../../src/logs/read-log-chunks.ts";
import { sealLog } from "../../src/logs/seal-log.ts";
import { gcmOpen, generateKekText, KekSource, orgDataKey } from "../../src/secrets/index.ts";
import {
  dataKeyForRead,
  destroyDueKeys,
  openBuffer,
  PlatformKeyStore,
  ShredLogCipher,
  type ShredKeyDeps,
} from "../../src/shredding/index.ts";
import { createObjectStore } from "../../src/storage/index.ts";
import { seedTenant, useTestDb } from "../support.ts";
import { ChunkCutter, claimedAttempt, LOG_CFG, useJournalPool, useLogStore } from "../logs/support.ts";

// Crypto-shredded log archives on real PostgreSQL and a real S3 server (issue 21, ADR 0037).
const t = useTestDb();
const pool = useJournalPool(t.url);
const s3 = useLogStore();
const dir = mkdtempSync(path.join(tmpdir(), "kiln-shred-"));
writeFileSync(path.join(dir, "kek"), generateKekText(), { mode: 0o600 });
const keyDir = path.join(dir, "shred-keys");
const deps = (): ShredKeyDeps => ({
  db: t.db(),
  keks: new KekSource(path.join(dir, "kek")),
  platformKeys: new PlatformKeyStore(keyDir),
});
const none = { stdout: 0, stderr: 0 };

async function codeOf(p: Promise<unknown>): Promise<string | null> {
  try {
    await p;
    return null;
  } catch (e) {
    return isDomainError(e) ? e.code : String(e);
  }
}

async function archivedLog(marker: string) {
  const a = await claimedAttempt(t.db());
  const cut = new ChunkCutter();
  const batch = Array.from({ length: 12 }, (_, i) =>
    cut.cut("stdout", `${marker} line ${i} `.repeat(800).slice(0, 8192)),
  );
  await appendLogChunks(pool(), LOG_CFG, a.writer, batch);
  await sealLog(t.db(), a.writer, { nextSeq: cut.nextSeq, bytes: cut.bytes, dropped: none });
  const cipher = new ShredLogCipher(deps());
  await archiveLogs(pool(), s3.store(), LOG_CFG, { shred: cipher });
  const segs = await pool().query<{ object_key: string; to_seq: number }>(
    "SELECT object_key, to_seq FROM log_segment WHERE attempt_id = $1 ORDER BY from_seq",
    [a.attemptId],
  );
  return { a, keys: segs.rows.map((r) => r.object_key), untilSeq: cut.nextSeq };
}

async function rawGet(key: string): Promise<Uint8Array | null> {
  const h = s3.s3();
  const c = createObjectStore({
    endpoint: h.endpoint,
    region: h.region,
    accessKeyId: h.accessKeyId,
    secretAccessKey: h.secretAccessKey,
  });
  try {
    const r = await c.send(new GetObjectCommand({ Bucket: h.bucket, Key: key }));
    return (await r.Body?.transformToByteArray()) ?? null;
  } catch (e) {
    if ((e as { name?: string }).name === "NoSuchKey") return null;
    throw e;
  }
}

async function readAll(reader: LogArchiveReader, attemptId: string, untilSeq: number): Promise<string> {
  const out: Buffer[] = [];
  for (let next = 0; next < untilSeq; ) {
    const chunks = await readLogChunks(pool(), reader, attemptId, next, { untilSeq });
    out.push(...chunks.map((c) => c.data));
    next = (chunks[chunks.length - 1]?.seq ?? next) + 1;
  }
  return Buffer.concat(out).toString();
}

describe("crypto-shredded log archive", () => {
  it("stores only ciphertext, reads back through the key, and names the org's data key of the day", async () => {
    const { a, keys, untilSeq } = await archivedLog("sekrit-build-output");
    expect(keys.length).toBeGreaterThan(0);
    for (const k of keys) {
      const body = Buffer.from((await rawGet(k)) ?? []);
      expect(body.subarray(0, 4).toString()).toBe("KLNS");
      expect(body.includes(Buffer.from("sekrit-build-output"))).toBe(false);
    }
    const text = await readAll(
      new LogArchiveReader(s3.store(), undefined, new ShredLogCipher(deps())),
      a.attemptId,
      untilSeq,
    );
    expect(text).toContain("sekrit-build-output line 11");
    // A reader without the opener refuses instead of serving ciphertext as a log.
    expect(await codeOf(readAll(new LogArchiveReader(s3.store()), a.attemptId, untilSeq))).toBe(
      "SHRED.KEY_UNAVAILABLE",
    );
    const rows = await t.db().$queryRaw<
      { n: bigint }[]
    >`SELECT count(*) AS n FROM shred_data_key WHERE org_id = ${a.tenant.orgId}::uuid AND kind = 'log'`;
    expect(Number(rows[0]?.n)).toBe(1); // every segment of the day shares the one key
  });

  it("never opens one org's data key for another org", async () => {
    const { a, keys } = await archivedLog("org-a-only");
    const other = await seedTenant(t.db());
    const body = (await rawGet(keys[0] as string)) as Uint8Array;
    const keyId = Buffer.from(body.subarray(12, 28))
      .toString("hex")
      .replace(/^(.{8})(.{4})(.{4})(.{4})/, "$1-$2-$3-$4-");
    expect((await dataKeyForRead(deps(), a.tenant.orgId, keyId, new Date())).id).toBe(keyId);
    expect(await codeOf(dataKeyForRead(deps(), other.orgId, keyId, new Date()))).toBe("SHRED.KEY_DESTROYED");
    // The other org's reader path refuses it too (the org comes from the object key, not the header).
    const cipher = new ShredLogCipher(deps());
    expect(await codeOf(cipher.open(other.orgId, body))).toBe("SHRED.KEY_DESTROYED");
  });

  it("SSE: a key dying mid-stream ends it with an error event; a (re)connect after refuses before streaming", async () => {
    const { a, keys } = await archivedLog("follow-me");
    expect(keys.length).toBeGreaterThan(1); // the second segment is read after the stream started
    const [row] = await t.db().$queryRaw<{ due_day: Date }[]>`
      SELECT due_day FROM shred_data_key WHERE org_id = ${a.tenant.orgId}::uuid`;
    const due = shredDueAt((row?.due_day as Date).toISOString().slice(0, 10));
    let clock = due.getTime() - 1;
    const fdeps: LogFollowerDeps = {
      db: t.db(),
      pool: pool(),
      archive: new LogArchiveReader(
        s3.store(),
        undefined,
        new ShredLogCipher(deps(), undefined, () => new Date(clock)),
        () => clock,
      ),
      hub: null,
      heads: new LogHeadCache(pool(), 20),
      pollMs: 50,
      keepAliveMs: 1_000,
    };
    const grant = await authorizeLogRead(t.db(), { orgId: a.tenant.orgId, jobId: a.jobId });
    const request = (lastEventId: string | null): FollowRequest => {
      const plan = planLogStream({ lastEventId, pinnedEpoch: null, epochs: grant.epochs, jobFinished: false });
      if (plan.kind === "done") throw new Error("unexpected plan");
      return { orgId: a.tenant.orgId, grant, lastEventId, pinnedEpoch: null, plan };
    };
    const frames: string[] = [];
    for await (const f of await openJobLog(fdeps, request(null), new AbortController().signal)) {
      frames.push(f);
      if (f.startsWith("id: ")) clock = due.getTime(); // the due instant arrives while streaming
    }
    const data = frames.filter((f) => f.startsWith("id: "));
    expect(data.length).toBeGreaterThan(0);
    expect(data.length).toBeLessThan(12);
    // Ends on the refusal, with no terminal event: the client must not take this for a complete log.
    expect(frames.some((f) => f.includes("event: log."))).toBe(frames.some((f) => f.includes("event: log.attempt")));
    const last = frames[frames.length - 1] ?? "";
    expect(last.split("\n").slice(0, 1)).toEqual(["event: error"]);
    expect(JSON.parse(last.split("\n")[1]?.slice(6) ?? "{}")).toMatchObject({
      code: "SHRED.KEY_DESTROYED",
      message: expect.any(String),
      details: { key_due_at: due.toISOString() },
    });
    // Connecting again, afresh or from the last cursor it got, is refused before any frame exists.
    const cursor = encodeLogCursor({ epoch: a.epoch, kind: "chunk", seq: data.length - 1 });
    for (const lastEventId of [null, cursor])
      expect(await codeOf(openJobLog(fdeps, request(lastEventId), new AbortController().signal))).toBe(
        "SHRED.KEY_DESTROYED",
      );
  });

  it("is gone at exactly D + window: reads refuse at the due instant, the destroyer leaves evidence, twice is once", async () => {
    const { a, keys, untilSeq } = await archivedLog("due-soon");
    const [row] = await t.db().$queryRaw<
      { id: string; day: Date; class: string; due_day: Date; wrapped: Uint8Array }[]
    >`
      SELECT id::text, day, class, due_day, wrapped FROM shred_data_key WHERE org_id = ${a.tenant.orgId}::uuid`;
    if (!row) throw new Error("no data key");
    const dueDay = row.due_day.toISOString().slice(0, 10);
    const due = shredDueAt(dueDay);
    const backupRow = Buffer.from(row.wrapped); // what a database backup taken now would hold
    const at = (ms: number) => () => new Date(due.getTime() + ms);
    const before = new ShredLogCipher(deps(), undefined, at(-1));
    expect(await readAll(new LogArchiveReader(s3.store(), undefined, before), a.attemptId, untilSeq)).toContain(
      "due-soon",
    );
    expect(await destroyDueKeys(deps(), new Date(due.getTime() - 1))).toEqual({ dataKeys: 0, platformKeys: 0 });
    // A serving process's cache may hold the decoded segment: it must not outlive the key either.
    let clock = due.getTime() - 1;
    const cached = new LogArchiveReader(
      s3.store(),
      undefined,
      new ShredLogCipher(deps(), undefined, () => new Date(clock)),
      () => clock,
    );
    expect(await readAll(cached, a.attemptId, untilSeq)).toContain("due-soon");
    clock = due.getTime();
    expect(await codeOf(readAll(cached, a.attemptId, untilSeq))).toBe("SHRED.KEY_DESTROYED");
    // A key destroyed while this process's clock is early (another process, an operator) stops
    // being served from the cache within 10 s as well.
    clock = due.getTime() - 60_000;
    const early = new LogArchiveReader(
      s3.store(),
      undefined,
      new ShredLogCipher(deps(), undefined, () => new Date(clock)),
      () => clock,
    );
    expect(await readAll(early, a.attemptId, untilSeq)).toContain("due-soon");
    const saved = await t.db().$queryRaw<
      Record<string, unknown>[]
    >`SELECT * FROM shred_data_key WHERE id = ${row.id}::uuid`;
    await t.db().$executeRaw`DELETE FROM shred_data_key WHERE id = ${row.id}::uuid`;
    clock += 9_000;
    expect(await readAll(early, a.attemptId, untilSeq)).toContain("due-soon"); // still inside the bound
    clock += 1_001;
    expect(await codeOf(readAll(early, a.attemptId, untilSeq))).toBe("SHRED.KEY_DESTROYED");
    await t.db().$executeRaw`
      INSERT INTO shred_data_key (id, org_id, day, kind, class, due_day, window_days, wrapped)
      SELECT id, org_id, day, kind, class, due_day, window_days, wrapped FROM json_populate_record(NULL::shred_data_key, ${JSON.stringify(saved[0], (_k, v) => (typeof v === "bigint" ? Number(v) : v))}::json)`;

    const r1 = await destroyDueKeys(deps(), due);
    expect(r1.dataKeys).toBeGreaterThanOrEqual(1);
    expect(r1.platformKeys).toBe(1);
    expect(await destroyDueKeys(deps(), new Date(due.getTime() + 60_000))).toEqual({ dataKeys: 0, platformKeys: 0 });
    const ev = await t.db().$queryRaw<{ key_kind: string; key_id: string; due_at: Date; destroyed_at: Date }[]>`
      SELECT key_kind, key_id, due_at, destroyed_at FROM shred_destruction WHERE key_id IN (${row.id}, ${dueDay}) ORDER BY key_kind`;
    expect(ev.map((e) => [e.key_kind, e.key_id, e.due_at.toISOString(), e.destroyed_at.toISOString()])).toEqual([
      ["data_key", row.id, due.toISOString(), due.toISOString()],
      ["platform_key", dueDay, due.toISOString(), due.toISOString()],
    ]);
    expect(
      await codeOf(t.db().$executeRaw`UPDATE shred_destruction SET destroyed_at = now() WHERE key_id = ${row.id}`),
    ).toMatch(/append-only/);
    expect(await codeOf(t.db().$executeRaw`DELETE FROM shred_destruction WHERE key_id = ${row.id}`)).toMatch(
      /append-only/,
    );
    const audit = await t.db().$queryRaw<{ subject: string }[]>`
      SELECT subject FROM audit_event WHERE org_id = ${a.tenant.orgId}::uuid AND kind = 'shred.data_key_destroyed'`;
    expect(audit.map((e) => e.subject)).toEqual([row.id]);

    // The proof: the stored object, fetched straight from the store, against everything that is left.
    const body = (await rawGet(keys[0] as string)) as Uint8Array;
    expect(readdirSync(keyDir).some((f) => f.startsWith(dueDay))).toBe(false);
    const remaining = await t.db().$queryRaw<
      { id: string; wrapped: Uint8Array; due_day: Date }[]
    >`SELECT id::text, wrapped, due_day FROM shred_data_key`;
    const dayKeys = await new PlatformKeyStore(keyDir).list();
    const orgDek = await t.db().$transaction((tx) => orgDataKey(tx, deps().keks, a.tenant.orgId, { create: false }));
    let opened = 0;
    // Every surviving wrapped row (and the backup's copy of the destroyed one) under every surviving day key.
    for (const w of [...remaining.map((r) => Buffer.from(r.wrapped)), backupRow])
      for (const d of dayKeys) {
        const pk = await new PlatformKeyStore(keyDir).get(d);
        if (!pk) continue;
        const inner = gcmOpen(pk, w, `kiln-shred-day:v1:${d}:${row.id}`);
        if (!inner) continue;
        const dk = gcmOpen(
          orgDek,
          inner,
          `kiln-shred-dk:v1:${a.tenant.orgId}:${row.id}:${row.day.toISOString().slice(0, 10)}:log:${row.class}`,
        );
        if (dk && tryOpen(row.id, dk, body)) opened++;
      }
    // And every 32-byte secret the database and key dir hold, used directly as the data key.
    for (const d of dayKeys) if (tryOpen(row.id, (await new PlatformKeyStore(keyDir).get(d)) as Buffer, body)) opened++;
    if (tryOpen(row.id, orgDek, body)) opened++;
    expect(opened).toBe(0);
  });
});

function tryOpen(id: string, key: Buffer, body: Uint8Array): boolean {
  try {
    openBuffer({ id, key }, body);
    return true;
  } catch {
    return false;
  }
}
