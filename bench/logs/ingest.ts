// Sustained ingest into the durable store: concurrent simulated agents POST 1 MiB batches
// (16 x 64 KiB chunks in the agent's binary frame, job tokens of real claimed attempts) to
// /v1/agent/jobs/{id}/logs; each 200 means the batch is committed in PostgreSQL (fsync on).
// Beside it, the same batches through appendLogChunks in-process (no HTTP) as the floor.
import { createHash, randomUUID } from "node:crypto";
import { encodeLogFrame, LOG_CHUNKS_CONTENT_TYPE, parseWorkflow } from "@kiln/domain";
import { appendLogChunks, claimJob, createAgentToken, DEFAULT_ENGINE_CONFIG, DEFAULT_LOG_CONFIG, registerSession } from "@kiln/engine";
import pg from "pg";
import { median, percentile } from "../lib/stats.ts";
import { progress, type LogBenchStack } from "./stack.ts";

const CHUNK = 64 * 1024;
const PER_BATCH = 16;

interface Writer { jobId: string; attemptId: string; epoch: number; token: string }

/** Realistic build-log text, 64 variants of 64 KiB, with digests computed once. */
function payloads(): { data: Buffer; sha256: string }[] {
  return Array.from({ length: 64 }, (_, v) => {
    let text = "";
    for (let i = 0; text.length < CHUNK; i++) text += `2026-11-29T12:00:${String(i % 60).padStart(2, "0")}Z [INFO] [${v}] compiling src/module${(i * 7919) % 997}/file${i}.ts (${(i * 104729) % 100000} bytes)\n`;
    const data = Buffer.from(text.slice(0, CHUNK));
    return { data, sha256: createHash("sha256").update(data).digest("hex") };
  });
}

async function claimWriters(s: LogBenchStack, n: number): Promise<Writer[]> {
  const db = s.stack.db;
  const cfg = { ...DEFAULT_ENGINE_CONFIG, leaseTtlMs: 3_600_000 };
  const pool = `ingest-${randomUUID().slice(0, 8)}`;
  const agent = await createAgentToken(db, { pool });
  const session = await registerSession(db, cfg, { agentTokenId: agent.id, pool, body: { hostname: "bench", capacity: 1000, labels: { os: "linux", arch: "x64", resource_class: "small", isolation: "process" } } });
  const parsed = parseWorkflow("version: 1\njobs:\n  - name: ingest\n    steps: [\"true\"]\n");
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

async function drive(writers: Writer[], seconds: number, send: (w: Writer, seq: number, offset: number) => Promise<number>): Promise<{ mbPerSec: number; ackP50: number; ackP95: number }> {
  const until = performance.now() + seconds * 1000;
  const acks: number[] = [];
  let bytes = 0;
  const t0 = performance.now();
  await Promise.all(writers.map(async (w) => {
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
  }));
  const wall = (performance.now() - t0) / 1000;
  return { mbPerSec: bytes / 1e6 / wall, ackP50: percentile(acks, 50), ackP95: percentile(acks, 95) };
}

export async function benchIngest(s: LogBenchStack, opts: { rounds: number; seconds: number; writers: number }): Promise<Record<string, unknown>> {
  const data = payloads();
  const http = [];
  const direct = [];
  const pool = new pg.Pool({ connectionString: s.stack.url, max: opts.writers });
  try {
    for (let round = 0; round < opts.rounds; round++) {
      progress(`ingest round ${round + 1}/${opts.rounds}: ${opts.writers} agents over HTTP for ${opts.seconds}s`);
      const ws = await claimWriters(s, opts.writers);
      http.push(await drive(ws, opts.seconds, async (w, seq, offset) => {
        // The agent's wire form: a binary frame (JSON header + raw chunk bytes).
        const picked = Array.from({ length: PER_BATCH }, (_, i) => data[(seq + i) % data.length]!);
        const header = { epoch: w.epoch, chunks: picked.map((p, i) => ({ stream: "stdout", seq: seq + i, offset: offset + i * CHUNK, length: CHUNK, sha256: p.sha256 })) };
        const res = await fetch(`${s.stack.base}/v1/agent/jobs/${w.jobId}/logs`, {
          method: "POST",
          headers: { authorization: `Bearer ${w.token}`, "content-type": LOG_CHUNKS_CONTENT_TYPE },
          body: encodeLogFrame(header, picked.map((p) => p.data)),
        });
        if (res.status !== 200) throw new Error(`ingest answered ${res.status}: ${await res.text()}`);
        await res.arrayBuffer();
        return PER_BATCH * CHUNK;
      }));
      progress(`  http: ${JSON.stringify(http[http.length - 1])}`);
      const wd = await claimWriters(s, opts.writers);
      const cfg = { ...DEFAULT_LOG_CONFIG, maxBytesPerAttempt: 2 ** 40, journalMaxBytes: 2 ** 40 };
      direct.push(await drive(wd, opts.seconds, async (w, seq, offset) => {
        const chunks = Array.from({ length: PER_BATCH }, (_, i) => {
          const p = data[(seq + i) % data.length]!;
          return { stream: "stdout" as const, seq: seq + i, offset: offset + i * CHUNK, length: CHUNK, sha256: p.sha256, data: p.data };
        });
        await appendLogChunks(pool, cfg, w, chunks);
        return PER_BATCH * CHUNK;
      }));
      progress(`  in-process: ${JSON.stringify(direct[direct.length - 1])}`);
      // Let the archiver take the journal back down between rounds (it deletes only archived rows).
      await s.stack.db.$executeRaw`UPDATE attempt SET status = 'completed', outcome = 'cancelled', cause = 'bench.cleanup', finished_at = now() WHERE status = 'running'`;
    }
  } finally {
    await pool.end();
  }
  return {
    httpMBps: http.map((r) => r.mbPerSec), httpMedianMBps: median(http.map((r) => r.mbPerSec)),
    httpAckP50Ms: median(http.map((r) => r.ackP50)), httpAckP95Ms: median(http.map((r) => r.ackP95)),
    inProcessMBps: direct.map((r) => r.mbPerSec), inProcessMedianMBps: median(direct.map((r) => r.mbPerSec)),
    httpOverInProcess: median(http.map((r) => r.mbPerSec)) / median(direct.map((r) => r.mbPerSec)),
  };
}
