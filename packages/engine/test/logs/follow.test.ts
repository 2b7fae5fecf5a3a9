import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { randomUUID } from "node:crypto";
import { planLogStream, type LogStreamPlan } from "@kiln/domain";
import { startRedis, type RedisHandle } from "@kiln/testkit";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { claimJob } from "../../src/dispatch/claim-job.ts";
import { appendLogChunks, type IncomingChunk } from "../../src/logs/append-log-chunks.ts";
import { authorizeLogRead } from "../../src/logs/authorize-log-read.ts";
import { LogHub, LogPublisher } from "../../src/logs/log-fanout.ts";
import { followJobLog, type LogFollowerDeps } from "../../src/logs/log-follower.ts";
import { LogHeadCache } from "../../src/logs/log-head.ts";
import { LogArchiveReader } from "../../src/logs/log-segments.ts";
import { sealLog } from "../../src/logs/seal-log.ts";
import { def, newSession, seedFrozenRun, seedTenant, TEST_CFG, useTestDb } from "../support.ts";
import { ChunkCutter, claimedAttempt, LOG_CFG, useJournalPool, useLogStore, type ClaimedAttempt } from "./support.ts";

const t = useTestDb();
const pool = useJournalPool(t.url);
const s3 = useLogStore();
let redis: RedisHandle;
let dir = "";
let pub: Redis;
let sub: Redis;
let hub: LogHub;
let publisher: LogPublisher;

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "kiln-logs-redis-"));
  redis = await startRedis({ dataDir: dir });
  pub = new Redis(redis.url);
  sub = new Redis(redis.url);
  hub = new LogHub(sub, (e) => {
    throw e;
  });
  publisher = new LogPublisher(
    pub,
    (e) => {
      throw e;
    },
    0,
  );
});
afterAll(async () => {
  pub.disconnect();
  sub.disconnect();
  await redis.stop();
  await rm(dir, { recursive: true, force: true });
});

const deps = (): LogFollowerDeps => ({
  db: t.db(),
  pool: pool(),
  archive: new LogArchiveReader(s3.store()),
  hub,
  heads: new LogHeadCache(pool(), 20),
  pollMs: 100,
  keepAliveMs: 300,
});

interface Frame {
  id?: string;
  event?: string;
  data?: string;
  comment?: boolean;
}

function parse(text: string): Frame[] {
  return text
    .split("\n\n")
    .filter((b) => b.length > 0)
    .map((block) => {
      const f: Frame = {};
      for (const line of block.split("\n")) {
        if (line.startsWith(":")) f.comment = true;
        else if (line.startsWith("id: ")) f.id = line.slice(4);
        else if (line.startsWith("event: ")) f.event = line.slice(7);
        else if (line.startsWith("data: ")) f.data = line.slice(6);
      }
      return f;
    });
}

/** Runs a follower in the background, collecting frames until it ends. */
function follow(
  jobId: string,
  orgId: string,
  plan: Exclude<LogStreamPlan, { kind: "done" }>,
  lastEventId: string | null = null,
) {
  const abort = new AbortController();
  const frames: Frame[] = [];
  const done = (async () => {
    const grant = await authorizeLogRead(t.db(), { orgId, jobId });
    for await (const text of followJobLog(deps(), { orgId, grant, lastEventId, pinnedEpoch: null, plan }, abort.signal))
      frames.push(...parse(text));
  })();
  return { frames, done, abort };
}

async function append(a: ClaimedAttempt, chunks: IncomingChunk[], live: boolean): Promise<void> {
  await appendLogChunks(pool(), LOG_CFG, a.writer, chunks);
  if (live) {
    publisher.publish(a.jobId, {
      kind: "chunks",
      epoch: a.epoch,
      chunks: chunks.map((c) => ({ seq: c.seq, stream: c.stream, offset: c.offset, data: c.data })),
    });
  }
}

function output(frames: Frame[]): { seqs: number[]; text: string } {
  const data = frames.filter((f) => f.id && !f.event);
  return {
    seqs: data.map((f) => Number(f.id?.split(":")[1])),
    text: data
      .map((f) => Buffer.from((JSON.parse(f.data ?? "{}") as { data: string }).data, "base64").toString())
      .join(""),
  };
}

describe("SSE follower", () => {
  it("replays, then follows live output exactly once, fills holes Redis loses, and ends with log.sealed", async () => {
    const a = await claimedAttempt(t.db());
    const cut = new ChunkCutter();
    await append(a, [cut.cut("stdout", "a0 "), cut.cut("stdout", "a1 ")], false);
    const f = follow(a.jobId, a.tenant.orgId, { kind: "stream", epoch: 1, fromSeq: 0, cursorRejected: false });
    await new Promise((r) => setTimeout(r, 200));
    await append(a, [cut.cut("stderr", "b2 "), cut.cut("stdout", "b3 ")], true);
    await append(a, [cut.cut("stdout", "lost4 ")], false); // Redis never hears about this one
    await append(a, [cut.cut("stdout", "c5 ")], true);
    await sealLog(t.db(), a.writer, { nextSeq: cut.nextSeq, bytes: cut.bytes, dropped: { stdout: 0, stderr: 0 } });
    publisher.publish(a.jobId, { kind: "state", epoch: 1, state: "sealed" });
    await f.done;
    expect(f.frames[0]?.event).toBeUndefined(); // the retry: frame
    expect(f.frames.find((x) => x.event === "log.attempt")).toBeTruthy();
    expect(output(f.frames)).toEqual({ seqs: [0, 1, 2, 3, 4, 5], text: "a0 a1 b2 b3 lost4 c5 " });
    const last = f.frames[f.frames.length - 1];
    expect(last).toMatchObject({ id: "1:end", event: "log.sealed" });
    expect(JSON.parse(last?.data ?? "{}")).toMatchObject({
      epoch: 1,
      state: "sealed",
      next_seq: 6,
      bytes: { stdout: 18, stderr: 3 },
    });
  });

  it("resumes exactly after a cursor, and ends with log.gapped for an attempt that ended unsealed", async () => {
    const a = await claimedAttempt(t.db());
    const cut = new ChunkCutter();
    await append(
      a,
      Array.from({ length: 6 }, (_, i) => cut.cut("stdout", `x${i} `)),
      false,
    );
    await t.db()
      .$executeRaw`UPDATE attempt SET lease_expires_at = now() - interval '1 second' WHERE id = ${a.attemptId}::uuid`;
    const { reconcile } = await import("../../src/attempts/reconcile.ts");
    await reconcile(t.db(), { ...TEST_CFG, retryBudget: 0 });
    const grant = await authorizeLogRead(t.db(), { orgId: a.tenant.orgId, jobId: a.jobId });
    const plan = planLogStream({
      lastEventId: "1:3",
      pinnedEpoch: null,
      epochs: grant.epochs,
      jobFinished: grant.jobFinished,
    });
    expect(plan).toEqual({ kind: "stream", epoch: 1, fromSeq: 4, cursorRejected: false });
    if (plan.kind !== "stream") return;
    const f = follow(a.jobId, a.tenant.orgId, plan, "1:3");
    await f.done;
    expect(output(f.frames)).toEqual({ seqs: [4, 5], text: "x4 x5 " });
    expect(f.frames.some((x) => x.event === "log.attempt")).toBe(false);
    expect(f.frames[f.frames.length - 1]).toMatchObject({ id: "1:end", event: "log.gapped" });
    // Reconnecting after the end of the last attempt of a finished job: nothing more, ever.
    const after = await authorizeLogRead(t.db(), { orgId: a.tenant.orgId, jobId: a.jobId });
    expect(
      planLogStream({ lastEventId: "1:end", pinnedEpoch: null, epochs: after.epochs, jobFinished: after.jobFinished }),
    ).toEqual({ kind: "done" });
  });

  it("announces a cursor it never issued, then replays everything", async () => {
    const a = await claimedAttempt(t.db());
    const cut = new ChunkCutter();
    await append(a, [cut.cut("stdout", "only ")], false);
    await sealLog(t.db(), a.writer, { nextSeq: 1, bytes: cut.bytes, dropped: { stdout: 0, stderr: 0 } });
    const f = follow(a.jobId, a.tenant.orgId, { kind: "stream", epoch: 1, fromSeq: 99, cursorRejected: false }, "1:98");
    await f.done;
    expect(f.frames.find((x) => x.event === "log.cursor_invalid")).toBeTruthy();
    expect(output(f.frames)).toEqual({ seqs: [0], text: "only " });
  });

  it("waits with keep-alives while the job is queued, then follows the attempt that starts", async () => {
    const tenant = await seedTenant(t.db());
    const sessionId = await newSession(t.db(), tenant);
    await seedFrozenRun(t.db(), tenant, def(`version: 1\njobs:\n  - name: later\n    steps: [echo]\n`));
    const job = await t.db().$queryRaw<{ id: string }[]>`SELECT id FROM job_run WHERE org_id = ${tenant.orgId}::uuid`;
    const jobId = job[0]!.id;
    const f = follow(jobId, tenant.orgId, { kind: "wait", cursorRejected: false });
    await new Promise((r) => setTimeout(r, 700));
    expect(f.frames.some((x) => x.comment)).toBe(true);
    const r = await claimJob(t.db(), TEST_CFG, { sessionId, claimRequestId: randomUUID() });
    if (r.kind !== "claimed") throw new Error("claim failed");
    const a: ClaimedAttempt = {
      tenant,
      runId: r.ticket.runId,
      jobId,
      attemptId: r.ticket.attemptId,
      epoch: 1,
      sessionId,
      writer: { jobId, attemptId: r.ticket.attemptId, epoch: 1 },
    };
    const cut = new ChunkCutter();
    await append(a, [cut.cut("stdout", "started ")], true);
    await sealLog(t.db(), a.writer, { nextSeq: 1, bytes: cut.bytes, dropped: { stdout: 0, stderr: 0 } });
    await f.done;
    expect(output(f.frames).text).toBe("started ");
    expect(f.frames[f.frames.length - 1]?.event).toBe("log.sealed");
  });

  it("skips chunk batches of a job nobody watches for a moment, then resumes publishing", async () => {
    const quiet = new LogPublisher(
      pub,
      (e) => {
        throw e;
      },
      300,
    );
    const watcher = new Redis(redis.url);
    const seen: number[] = [];
    const jobId = randomUUID();
    const batch = (seq: number) => ({
      kind: "chunks" as const,
      epoch: 1,
      chunks: [{ seq, stream: "stdout" as const, offset: seq, data: Buffer.from("x") }],
    });
    quiet.publish(jobId, batch(0)); // reaches nobody: the job counts as unwatched for 300 ms
    await new Promise((r) => setTimeout(r, 50));
    const h = new LogHub(watcher, (e) => {
      throw e;
    });
    h.subscribe(jobId, (m) => {
      if (m.kind === "chunks") seen.push(...m.chunks.map((c) => c.seq));
    });
    await new Promise((r) => setTimeout(r, 50));
    quiet.publish(jobId, batch(1)); // skipped: followers would fetch it from the journal
    await new Promise((r) => setTimeout(r, 350));
    quiet.publish(jobId, batch(2));
    await new Promise((r) => setTimeout(r, 100));
    expect(seen).toEqual([2]);
    watcher.disconnect();
  });

  it("another org's job does not exist", async () => {
    const a = await claimedAttempt(t.db());
    const other = await seedTenant(t.db());
    await expect(authorizeLogRead(t.db(), { orgId: other.orgId, jobId: a.jobId })).rejects.toMatchObject({
      code: "JOB.NOT_FOUND",
    });
  });
});
