// Sustained ingest into the durable store: concurrent simulated agents POST 1 MiB batches
// (16 x 64 KiB chunks in the agent's binary frame, job tokens of real claimed attempts) to
// /v1/agent/jobs/{id}/logs; each 200 means the batch is committed in PostgreSQL (fsync on).
// Beside it, the same batches through appendLogChunks in-process (no HTTP) as the floor.
import { createHash, randomUUID } from "node:crypto";
import http from "node:http";
import { encodeLogFrame, LOG_CHUNKS_CONTENT_TYPE, parseWorkflow } from "@kiln/domain";
import {
  appendLogChunks,
  claimJob,
  createAgentToken,
  setPoolPolicy,
  DEFAULT_ENGINE_CONFIG,
  DEFAULT_LOG_CONFIG,
  registerSession,
} from "@kiln/engine";
import pg from "pg";
import { median, percentile } from "../lib/stats.ts";
import { progress, type LogBenchStack } from "./stack.ts";

const CHUNK = 64 * 1024;
const PER_BATCH = 16;

interface Writer {
  jobId: string;
  attemptId: string;
  epoch: number;
  token: string;
}

/** Realistic build-log text, 64 variants of 64 KiB, with digests computed once. */
function payloads(): { data: Buffer; sha256: string }[] {
  return Array.from({ length: 64 }, (_, v) => {
    let text = "";
    for (let i = 0; text.length < CHUNK; i++)
      text += `2026-11-29T12:00:${String(i % 60).padStart(2, "0")}Z [INFO] [${v}] compiling src/module${(i * 7919) % 997}/file${i}.ts (${(i * 104729) % 100000} bytes)\n`;
    const data = Buffer.from(text.slice(0, CHUNK));
    return { data, sha256: createHash("sha256").update(data).digest("hex") };
  });
}

const keepAlive = new http.Agent({ keepAlive: true, maxSockets: 64 });

function post(url: string, token: string, parts: Buffer[]): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const length = parts.reduce((n, p) => n + p.length, 0);
    const req = http.request(
      url,
      {
        method: "POST",
        agent: keepAlive,
        headers: {
          authorization: `Bearer ${token}`,
          "content-type": LOG_CHUNKS_CONTENT_TYPE,
          "content-length": length,
        },
      },
      (res) => {
        const body: Buffer[] = [];
        res.on("data", (b: Buffer) => body.push(b));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(body).toString("utf8") }));
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    for (const p of parts) req.write(p);
    req.end();
  });
}

async function claimWriters(s: LogBenchStack, n: number): Promise<Writer[]> {
  const db = s.stack.db;
  const cfg = { ...DEFAULT_ENGINE_CONFIG, leaseTtlMs: 3_600_000 };
  const pool = `ingest-${randomUUID().slice(0, 8)}`;
  // Process-isolated simulated hosts: a development pool (docs/adr/0022).
  await setPoolPolicy(db, { name: pool, minIsolation: "process", development: true, actor: "bench" });
  const agent = await createAgentToken(db, { pool });
  const session = await registerSession(db, cfg, {
    agentTokenId: agent.id,
    pool,
    body: {
      hostname: "bench",
      capacity: 1000,
      labels: { os: "linux", arch: "x64", resource_class: "small", isolation: "process" },
    },
  });
  const parsed = parseWorkflow('version: 1\njobs:\n  - name: ingest\n    steps: ["true"]\n');
  if (!parsed.ok) throw new Error(parsed.error.message);
  const out: Writer[] = [];
  for (let i = 0; i < n; i++) {
    const run = await db.$queryRaw<{ id: string }[]>`
      INSERT INTO workflow_run (org_id, repo_id, status, trust_class, trigger, commit_sha, workflow_path, definition, inputs)
      VALUES (${s.orgId}::uuid, ${s.repoId}::uuid, 'running', 'trusted', 'manual', ${"b".repeat(40)}, '.kiln/workflow.yaml', ${JSON.stringify(parsed.definition)}::jsonb, '{}'::jsonb) RETURNING id`;
    await db.$executeRaw`INSERT INTO job_run (run_id, org_id, job_index, name, needs, pool, status, ready_at) VALUES (${run[0]!.id}::uuid, ${s.orgId}::uuid, 0, 'ingest', '{}', ${pool}, 'ready', now())`;
    const c = await claimJob(db, cfg, { sessionId: session.sessionId, claimRequestId: randomUUID() });
    if (c.kind !== "claimed") throw new Error(`claim: ${c.kind}`);
    out.push({ jobId: c.ticket.jobId, attemptId: c.ticket.attemptId, epoch: c.ticket.epoch, token: c.ticket.jobToken });
  }
  return out;
}

async function drive(
  writers: Writer[],
  seconds: number,
  send: (w: Writer, seq: number, offset: number) => Promise<number>,
): Promise<{ mbPerSec: number; ackP50: number; ackP95: number }> {
  const until = performance.now() + seconds * 1000;
  const acks: number[] = [];
  let bytes = 0;
  const t0 = performance.now();
  await Promise.all(
    writers.map(async (w) => {
      let seq = 0;
      let offset = 0;
      while (performance.now() < until) {
        const t = performance.now();
        const n = await send(w, seq, offset);
        acks.push(performance.now() - t);
        seq += PER_BATCH;
        offset += n;
        bytes += n;
      }
    }),
  );
  const wall = (performance.now() - t0) / 1000;
  return { mbPerSec: bytes / 1e6 / wall, ackP50: percentile(acks, 50), ackP95: percentile(acks, 95) };
}

/**
 * Waits until the archiver has caught up (no log holds a full segment in the journal), so a phase
 * is not charged with archiving the previous phase's backlog: the in-process phase writes ~1.5 GB
 * in 15 s, and the next HTTP round used to compete with its archiving. Returns the wait in ms.
 */
async function drained(s: LogBenchStack): Promise<number> {
  const t0 = performance.now();
  for (;;) {
    const [r] = await s.stack.db.$queryRaw<
      { full: bigint }[]
    >`SELECT count(*) AS full FROM log_attempt WHERE journal_bytes >= ${DEFAULT_LOG_CONFIG.segmentTargetBytes}`;
    if (Number(r?.full ?? 0) === 0) return Math.round(performance.now() - t0);
    if (performance.now() - t0 > 300_000) throw new Error("the archiver did not catch up within 300 s");
    await new Promise((res) => setTimeout(res, 250));
  }
}

export async function benchIngest(
  s: LogBenchStack,
  opts: { rounds: number; seconds: number; writers: number },
): Promise<Record<string, unknown>> {
  const data = payloads();
  const http = [];
  const direct = [];
  const archiveLagMs: number[] = [];
  const pool = new pg.Pool({ connectionString: s.stack.url, max: opts.writers });
  // The stack's shutdown cuts this pool's idle sessions; unheard, that is an uncaught exception.
  pool.on("error", () => undefined);
  try {
    for (let round = 0; round < opts.rounds; round++) {
      progress(`ingest round ${round + 1}/${opts.rounds}: ${opts.writers} agents over HTTP for ${opts.seconds}s`);
      const ws = await claimWriters(s, opts.writers);
      progress(`  archiver caught up in ${await drained(s)} ms`);
      http.push(
        await drive(ws, opts.seconds, async (w, seq, offset) => {
          // The agent's wire form: a binary frame (JSON header + raw chunk bytes), written as its
          // parts on a kept-alive node:http connection. The simulated agents share the 2 cores with
          // the server: with fetch and a concatenated frame they took ~a quarter of the machine
          // (4.1 of 15 CPU-s in a sample) that real agents, on their own hosts, never take from it.
          const picked = Array.from({ length: PER_BATCH }, (_, i) => data[(seq + i) % data.length]!);
          const header = {
            epoch: w.epoch,
            chunks: picked.map((p, i) => ({
              stream: "stdout",
              seq: seq + i,
              offset: offset + i * CHUNK,
              length: CHUNK,
              sha256: p.sha256,
            })),
          };
          const head = Buffer.from(encodeLogFrame(header, []));
          // encodeLogFrame's 4-byte prefix is the header length: the frame is that head, then the payloads.
          const { status, text } = await post(`${s.stack.base}/v1/agent/jobs/${w.jobId}/logs`, w.token, [
            head,
            ...picked.map((p) => p.data),
          ]);
          if (status !== 200) throw new Error(`ingest answered ${status}: ${text}`);
          return PER_BATCH * CHUNK;
        }),
      );
      progress(`  http: ${JSON.stringify(http[http.length - 1])}`);
      const wd = await claimWriters(s, opts.writers);
      // How far the archiver was behind the HTTP phase when it ended (0 = it kept up).
      const lag = await drained(s);
      archiveLagMs.push(lag);
      progress(`  archiver caught up ${lag} ms after the HTTP phase`);
      const cfg = { ...DEFAULT_LOG_CONFIG, maxBytesPerAttempt: 2 ** 40, journalMaxBytes: 2 ** 40 };
      direct.push(
        await drive(wd, opts.seconds, async (w, seq, offset) => {
          const chunks = Array.from({ length: PER_BATCH }, (_, i) => {
            const p = data[(seq + i) % data.length]!;
            return {
              stream: "stdout" as const,
              seq: seq + i,
              offset: offset + i * CHUNK,
              length: CHUNK,
              sha256: p.sha256,
              data: p.data,
            };
          });
          await appendLogChunks(pool, cfg, w, chunks);
          return PER_BATCH * CHUNK;
        }),
      );
      progress(`  in-process: ${JSON.stringify(direct[direct.length - 1])}`);
      // Let the archiver take the journal back down between rounds (it deletes only archived rows).
      await s.stack.db
        .$executeRaw`UPDATE attempt SET status = 'completed', outcome = 'cancelled', cause = 'bench.cleanup', finished_at = now() WHERE status = 'running'`;
    }
  } finally {
    await pool.end();
  }
  return {
    httpMBps: http.map((r) => r.mbPerSec),
    httpMedianMBps: median(http.map((r) => r.mbPerSec)),
    httpAckP50Ms: median(http.map((r) => r.ackP50)),
    httpAckP95Ms: median(http.map((r) => r.ackP95)),
    inProcessMBps: direct.map((r) => r.mbPerSec),
    inProcessMedianMBps: median(direct.map((r) => r.mbPerSec)),
    archiveLagAfterHttpMs: archiveLagMs,
    httpOverInProcess: median(http.map((r) => r.mbPerSec)) / median(direct.map((r) => r.mbPerSec)),
  };
}
