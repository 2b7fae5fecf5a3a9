import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { s3Env, startS3, type S3Handle } from "@kiln/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Platform } from "./support/platform.ts";
import { collectLog, SseCuttingProxy } from "./support/log-stream.ts";

// Issue 4 end to end: a chatty job on a real host agent, its log followed live over SSE by a real
// EventSource through a proxy that cuts the connection after 1, 7 and 500 events. The log is
// archived to S3 while it is still being written, so replays cross journal and archive.
let s3: S3Handle;
let dir = "";
let p: Platform;
let tenant: Awaited<ReturnType<Platform["seedTenant"]>>;

const SECRET = "kiln-e2e-secret-7f3a9";
const LINES = 3000;
const WORKFLOW = `version: 1
jobs:
  - name: chatty
    env:
      DEPLOY_TOKEN: "${SECRET}"
    steps:
      - |
        i=0
        while [ $i -lt ${LINES} ]; do
          i=$((i+1))
          echo "out line $i of the build, with some padding to make it longer"
          if [ $((i % 7)) -eq 0 ]; then echo "err line $i" >&2; fi
          if [ $((i % 100)) -eq 0 ]; then sleep 0.1; fi
        done
      - |
        printf 'token: kiln-e2e-'; sleep 0.5; printf 'secret-7f3a9 (split across two writes and a flush)\\n'
`;

function expected(): { stdout: string; stderr: string } {
  let stdout = "";
  let stderr = "";
  for (let i = 1; i <= LINES; i++) {
    stdout += `out line ${i} of the build, with some padding to make it longer\n`;
    if (i % 7 === 0) stderr += `err line ${i}\n`;
  }
  stdout += "token: *** (split across two writes and a flush)\n";
  return { stdout, stderr };
}

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "kiln-e2e-logs-"));
  s3 = await startS3({ dataDir: path.join(dir, "s3"), bucket: "kiln" });
  p = new Platform({
    ...s3Env(s3),
    // A generous lease: this test is about the log stream, not about fencing a starved agent.
    KILN_LEASE_TTL_MS: "15000",
    KILN_HEARTBEAT_MS: "1000",
    // Small chunks (many events) and small segments (archiving while the job still runs).
    KILN_LOG_FLUSH_BYTES: "256",
    KILN_LOG_SEGMENT_BYTES: "16384",
    KILN_LOG_ARCHIVE_MS: "300",
    KILN_LOG_POLL_MS: "250",
    KILN_SSE_KEEPALIVE_MS: "1000",
  });
  await p.start();
  tenant = await p.seedTenant("logs", { ".kiln/workflow.yaml": WORKFLOW });
  await p.startAgent("agent-1", tenant.agentToken);
}, 180_000);
afterAll(async () => {
  await p?.stop();
  await s3?.stop();
  await rm(dir, { recursive: true, force: true });
});

async function triggerJob(key: string): Promise<{ runId: string; jobId: string }> {
  const r = await p.api(
    "POST",
    `/v1/repos/${tenant.repoId}/workflow-runs`,
    tenant.token,
    { workflow_path: ".kiln/workflow.yaml", commit_sha: tenant.git.headSha },
    { "idempotency-key": key },
  );
  expect(r.status).toBe(202);
  const run = await p.waitForRun(r.json.run_id, tenant.token, (x) => x.jobs?.length > 0);
  return { runId: r.json.run_id, jobId: run.jobs[0].id };
}

async function raw(
  jobId: string,
  stream: string,
  token = tenant.token,
): Promise<{ status: number; body: Buffer; state: string | null }> {
  const r = await fetch(`${p.base}/v1/jobs/${jobId}/logs/raw?stream=${stream}`, {
    headers: { authorization: `Bearer ${token}` },
  });
  return { status: r.status, body: Buffer.from(await r.arrayBuffer()), state: r.headers.get("x-kiln-log-state") };
}

describe("live logs over SSE", () => {
  let job: { runId: string; jobId: string };

  it("a client cut after 1, 7 and 500 events resumes exactly: the data equals the stored log byte for byte", async () => {
    const proxy = new SseCuttingProxy(new URL(p.base), [1, 7, 500]);
    const proxyBase = await proxy.start();
    try {
      job = await triggerJob("sse-1");
      // Connect right away: the job is still queued, so the stream starts by waiting.
      const { done } = collectLog(`${proxyBase}/v1/jobs/${job.jobId}/logs/events`, tenant.token, 120_000);
      const log = await done;
      const run = await p.waitForRun(job.runId, tenant.token, (x) => x.status === "completed");
      expect([run.outcome, run.jobs[0].attempts.length], JSON.stringify(run.jobs[0].attempts)).toEqual(["success", 1]);

      // Every cut happened where asked, and every reconnect named the last event the client had.
      const cuts = proxy.connections.filter((c) => c.cut);
      expect(cuts.map((c) => c.ids.length)).toEqual([1, 7, 500]);
      expect(proxy.connections[0]?.lastEventId).toBeNull();
      for (let i = 0; i < 3; i++) expect(proxy.connections[i + 1]?.lastEventId).toBe(proxy.connections[i]?.ids.at(-1));

      // No gap, no duplicate: the client saw chunk 0..n-1 of attempt 1 once each, then log.sealed.
      expect(log.ids.length).toBeGreaterThan(600);
      expect(log.ids).toEqual(log.ids.map((_, i) => `1:${i}`));
      expect(log.terminal).toMatchObject({
        event: "log.sealed",
        id: "1:end",
        data: { state: "sealed", next_seq: log.ids.length },
      });
      const want = expected();
      expect(log.stdout.toString()).toBe(want.stdout);
      expect(log.stderr.toString()).toBe(want.stderr);
      expect(log.stdout.includes(SECRET)).toBe(false);
      // Each event's offset is where its bytes start in its stream.
      let at = 0;
      for (const o of log.offsets.stdout) {
        expect(o).toBeGreaterThanOrEqual(at);
        at = o;
      }

      // The stored log (journal + archive) is the same bytes.
      for (const stream of ["stdout", "stderr"] as const) {
        const stored = await raw(job.jobId, stream);
        expect(stored.status).toBe(200);
        expect(stored.state).toBe("sealed");
        expect(stored.body.equals(log[stream])).toBe(true);
      }
    } finally {
      await proxy.stop();
    }
  }, 180_000);

  it("replays a finished, fully archived log from object storage, identically", async () => {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const rows = await p.db.$queryRaw<{ index_key: string | null; journal_bytes: bigint }[]>`
        SELECT index_key, journal_bytes FROM log_attempt WHERE job_id = ${job.jobId}::uuid`;
      if (rows[0]?.index_key && rows[0].journal_bytes === 0n) break;
      if (Date.now() > deadline)
        throw new Error(
          `log was not archived: ${JSON.stringify(rows, (_, v) => (typeof v === "bigint" ? String(v) : v))}\n${p.logs()}`,
        );
      await new Promise((r) => setTimeout(r, 250));
    }
    const chunks = await p.db.$queryRaw<
      { n: bigint }[]
    >`SELECT count(*) AS n FROM log_chunk c JOIN log_attempt l ON l.attempt_id = c.attempt_id WHERE l.job_id = ${job.jobId}::uuid`;
    expect(chunks[0]?.n).toBe(0n);
    const log = await collectLog(`${p.base}/v1/jobs/${job.jobId}/logs/events`, tenant.token).done;
    const want = expected();
    expect(log.stdout.toString()).toBe(want.stdout);
    expect(log.stderr.toString()).toBe(want.stderr);
    expect(log.terminal?.event).toBe("log.sealed");
    expect((await raw(job.jobId, "stdout")).body.toString()).toBe(want.stdout);
  }, 60_000);

  it("answers 204 after the end, replays in full after an unknown cursor (saying so), and is org-scoped", async () => {
    const url = `${p.base}/v1/jobs/${job.jobId}/logs/events`;
    const auth = { authorization: `Bearer ${tenant.token}` };
    expect((await fetch(url, { headers: { ...auth, "last-event-id": "1:end" } })).status).toBe(204);

    const bad = await fetch(url, { headers: { ...auth, "last-event-id": "not-a-cursor" } });
    expect(bad.status).toBe(200);
    expect(bad.headers.get("content-type")).toMatch(/^text\/event-stream/);
    const text = await bad.text();
    expect(text.indexOf("event: log.cursor_invalid")).toBeGreaterThanOrEqual(0);
    expect(text.indexOf("event: log.cursor_invalid")).toBeLessThan(text.indexOf("id: 1:0\n"));
    expect(text.trimEnd().endsWith('"dropped_bytes":{"stdout":0,"stderr":0}}')).toBe(true);

    const pinned = await fetch(`${url}?attempt=1`, { headers: { ...auth, "last-event-id": "1:5" } });
    expect((await pinned.text()).includes("id: 1:6\n")).toBe(true);
    expect((await fetch(`${url}?attempt=9`, { headers: auth })).status).toBe(404);
    expect((await fetch(`${url}?attempt=x`, { headers: auth })).status).toBe(400);

    const other = await p.seedTenant("logs-other", { ".kiln/workflow.yaml": WORKFLOW });
    const foreign = await fetch(url, { headers: { authorization: `Bearer ${other.token}` } });
    expect(foreign.status).toBe(404);
    expect(await foreign.json()).toMatchObject({ error: { code: "JOB.NOT_FOUND" } });
    expect((await raw(job.jobId, "stdout", other.token)).status).toBe(404);
    expect((await fetch(url)).status).toBe(401);
  }, 60_000);
});
