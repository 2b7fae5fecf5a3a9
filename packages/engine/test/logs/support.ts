import { randomUUID } from "node:crypto";
import { startS3, type S3Handle } from "@kiln/testkit";
import pg from "pg";
import { afterAll, beforeAll } from "vitest";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import type { Db } from "@kiln/db";
import { claimJob } from "../../src/dispatch/claim-job.ts";
import { createObjectStore } from "../../src/storage/index.ts";
import { DEFAULT_LOG_CONFIG, type LogConfig } from "../../src/logs/log-config.ts";
import type { IncomingChunk, LogWriter } from "../../src/logs/append-log-chunks.ts";
import { s3LogStore, type LogObjectStore } from "../../src/logs/log-object-store.ts";
import { def, newSession, seedFrozenRun, seedTenant, TEST_CFG, type Tenant } from "../support.ts";
import { expireLease, sha256 } from "../artifacts/support.ts";

export const LOG_CFG: LogConfig = { ...DEFAULT_LOG_CONFIG, segmentTargetBytes: 64 * 1024 };

/** The journal's own pool (the byte path bypasses Prisma), closed after the file. */
export function useJournalPool(url: () => string): () => pg.Pool {
  let pool: pg.Pool | null = null;
  beforeAll(() => {
    pool = new pg.Pool({ connectionString: url(), max: 8 });
    // An idle client the server terminates while the file's database is dropped at teardown
    // (57P01) is not a test result; anything else still surfaces as the unhandled error it is.
    pool.on("error", (err: Error & { code?: string }) => {
      if (err.code !== "57P01") throw err;
    });
  });
  afterAll(async () => {
    await pool?.end();
  });
  return () => {
    if (!pool) throw new Error("pool not ready");
    return pool;
  };
}

/** A real S3-compatible server (s3rver) for the archive. */
export function useLogStore(): { store: () => LogObjectStore; s3: () => S3Handle } {
  let s3: S3Handle | null = null;
  let store: LogObjectStore | null = null;
  let dir = "";
  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), "kiln-logs-s3-"));
    s3 = await startS3({ dataDir: dir, bucket: "kiln" });
    store = s3LogStore(
      createObjectStore({
        endpoint: s3.endpoint,
        region: s3.region,
        accessKeyId: s3.accessKeyId,
        secretAccessKey: s3.secretAccessKey,
      }),
      s3.bucket,
    );
  });
  afterAll(async () => {
    await s3?.stop();
    await rm(dir, { recursive: true, force: true });
  });
  return {
    store: () => {
      if (!store) throw new Error("store not ready");
      return store;
    },
    s3: () => {
      if (!s3) throw new Error("s3 not ready");
      return s3;
    },
  };
}

export interface ClaimedAttempt {
  tenant: Tenant;
  runId: string;
  jobId: string;
  attemptId: string;
  epoch: number;
  writer: LogWriter;
  sessionId: string;
}

const ONE = `version: 1\njobs:\n  - name: build\n    steps: [echo hi]\n`;

/** A frozen one-job run whose job is claimed: a live attempt to write logs for. */
export async function claimedAttempt(db: Db, tenant?: Tenant): Promise<ClaimedAttempt> {
  const t = tenant ?? (await seedTenant(db));
  const sessionId = await newSession(db, t);
  const runId = await seedFrozenRun(db, t, def(ONE));
  const r = await claimJob(db, TEST_CFG, { sessionId, claimRequestId: randomUUID() });
  if (r.kind !== "claimed") throw new Error(`claim failed: ${r.kind}`);
  const tk = r.ticket;
  return {
    tenant: t,
    runId,
    jobId: tk.jobId,
    attemptId: tk.attemptId,
    epoch: tk.epoch,
    sessionId,
    writer: { jobId: tk.jobId, attemptId: tk.attemptId, epoch: tk.epoch },
  };
}

/** Claims the job again after its current attempt ended (e.g. fenced with a retry scheduled). */
export async function reclaim(db: Db, a: ClaimedAttempt): Promise<ClaimedAttempt> {
  await db.$executeRaw`UPDATE job_run SET next_attempt_at = NULL WHERE id = ${a.jobId}::uuid`;
  const r = await claimJob(db, TEST_CFG, { sessionId: a.sessionId, claimRequestId: randomUUID(), offer: null });
  if (r.kind !== "claimed" || r.ticket.jobId !== a.jobId) throw new Error("reclaim failed");
  const tk = r.ticket;
  return {
    ...a,
    attemptId: tk.attemptId,
    epoch: tk.epoch,
    writer: { jobId: tk.jobId, attemptId: tk.attemptId, epoch: tk.epoch },
  };
}

/** Builds consecutive chunks the way the agent cuts them. */
export class ChunkCutter {
  private seq = 0;
  private readonly offsets = { stdout: 0, stderr: 0 };

  cut(stream: "stdout" | "stderr", data: Buffer | string): IncomingChunk {
    const bytes = typeof data === "string" ? Buffer.from(data) : data;
    const c = {
      seq: this.seq++,
      stream,
      offset: this.offsets[stream],
      length: bytes.length,
      sha256: sha256(bytes),
      data: bytes,
    };
    this.offsets[stream] += bytes.length;
    return c;
  }

  get nextSeq(): number {
    return this.seq;
  }

  get bytes(): { stdout: number; stderr: number } {
    return { ...this.offsets };
  }
}

export { expireLease, sha256 };

export async function domainCode(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (e) {
    return (e as { code?: string }).code ?? String(e);
  }
  return "no error";
}
