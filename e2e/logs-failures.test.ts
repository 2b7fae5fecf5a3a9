import { createHash } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { platformKey, signJobToken } from "@kiln/engine";
import { s3Env, startS3, type S3Handle } from "@kiln/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Platform } from "./support/platform.ts";
import { collectLog } from "./support/log-stream.ts";

// Issue 4, the failure side: a job that writes far past the limit still finishes (truncated log),
// an agent killed mid-stream leaves a gapped log whose acknowledged bytes are intact, and the
// ingest route itself refuses conflicting bytes and a fenced epoch's chunks. Every tenant's agent
// serves the shared "default" pool, so each test stops its agent before the next one starts.
let s3: S3Handle;
let dir = "";
let p: Platform;

const LIMIT = 1024 * 1024;

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "kiln-e2e-logfail-"));
  s3 = await startS3({ dataDir: path.join(dir, "s3"), bucket: "kiln" });
  p = new Platform({
    ...s3Env(s3),
    KILN_RETRY_BUDGET: "0",
    KILN_LEASE_TTL_MS: "5000",
    KILN_HEARTBEAT_MS: "500",
    KILN_LOG_MAX_BYTES: String(LIMIT),
    KILN_LOG_POLL_MS: "250",
  });
  await p.start();
}, 180_000);
afterAll(async () => {
  await p?.stop();
  await s3?.stop();
  await rm(dir, { recursive: true, force: true });
});

async function startJob(
  slug: string,
  workflow: string,
): Promise<{
  t: Awaited<ReturnType<Platform["seedTenant"]>>;
  runId: string;
  jobId: string;
  agent: Awaited<ReturnType<Platform["startAgent"]>>;
}> {
  const t = await p.seedTenant(slug, { ".kiln/workflow.yaml": workflow });
  const agent = await p.startAgent(`agent-${slug}`, t.agentToken);
  const r = await p.api(
    "POST",
    `/v1/repos/${t.repoId}/workflow-runs`,
    t.token,
    { workflow_path: ".kiln/workflow.yaml", commit_sha: t.git.headSha },
    { "idempotency-key": slug },
  );
  expect(r.status).toBe(202);
  const run = await p.waitForRun(r.json.run_id, t.token, (x) => x.jobs?.length > 0);
  return { t, runId: r.json.run_id, jobId: run.jobs[0].id, agent };
}

async function rawLog(
  jobId: string,
  token: string,
  stream = "stdout",
): Promise<{ body: string; state: string | null; dropped: string | null }> {
  const r = await fetch(`${p.base}/v1/jobs/${jobId}/logs/raw?stream=${stream}`, {
    headers: { authorization: `Bearer ${token}` },
  });
  expect(r.status).toBe(200);
  return {
    body: await r.text(),
    state: r.headers.get("x-kiln-log-state"),
    dropped: r.headers.get("x-kiln-log-dropped-bytes"),
  };
}

function chunk(seq: number, offset: number, text: string) {
  const data = Buffer.from(text);
  return {
    stream: "stdout",
    seq,
    offset,
    length: data.length,
    sha256: createHash("sha256").update(data).digest("hex"),
    data: data.toString("base64"),
  };
}

describe("log limits and failures", () => {
  it("a job writing 100 MB past a 1 MiB limit still succeeds; the log is truncated with the dropped count", async () => {
    const total = 100 * 1000 * 1000;
    const { t, runId, jobId, agent } = await startJob(
      "flood",
      `version: 1\njobs:\n  - name: flood\n    steps:\n      - "yes 0123456789abcdefghijklmnopqrstuvwxyz | head -c ${total}"\n      - echo after the flood\n`,
    );
    const log = collectLog(`${p.base}/v1/jobs/${jobId}/logs/events`, t.token, 120_000).done;
    const run = await p.waitForRun(runId, t.token, (x) => x.status === "completed", 120_000);
    expect(run.outcome).toBe("success");
    const seen = await log;
    expect(seen.terminal).toMatchObject({
      event: "log.truncated",
      id: "1:end",
      data: { state: "truncated", dropped_bytes: { stdout: total + "after the flood\n".length - LIMIT, stderr: 0 } },
    });
    const line = "0123456789abcdefghijklmnopqrstuvwxyz\n";
    const stored = await rawLog(jobId, t.token);
    expect(stored.state).toBe("truncated");
    expect(stored.body.length).toBe(LIMIT);
    expect(stored.body).toBe(line.repeat(Math.ceil(LIMIT / line.length)).slice(0, LIMIT));
    expect(Number(stored.dropped)).toBe(total + 16 - LIMIT);
    expect(seen.stdout.toString()).toBe(stored.body);
    agent.child.kill("SIGKILL");
  }, 180_000);

  it("an agent killed mid-stream leaves a gapped log: everything acknowledged is intact, nothing is invented", async () => {
    const { t, runId, jobId, agent } = await startJob(
      "killed",
      `version: 1\njobs:\n  - name: ticker\n    steps:\n      - |\n        i=0\n        while [ $i -lt 6000 ]; do i=$((i+1)); echo "tick $i"; sleep 0.01; done\n`,
    );
    // Wait until some output is durable, then kill the agent without warning.
    let before = "";
    const deadline = Date.now() + 30_000;
    while (before.length < 2000) {
      if (Date.now() > deadline) throw new Error(`no output\n${p.logs()}`);
      await new Promise((r) => setTimeout(r, 200));
      const r = await fetch(`${p.base}/v1/jobs/${jobId}/logs/raw`, { headers: { authorization: `Bearer ${t.token}` } });
      if (r.status === 200) before = await r.text();
    }
    agent.child.kill("SIGKILL");
    const run = await p.waitForRun(runId, t.token, (x) => x.status === "completed", 30_000);
    expect(run.jobs[0].attempts[0]).toMatchObject({ outcome: "platform_failure", cause: "lease.expired" });
    const after = await rawLog(jobId, t.token);
    expect(after.state).toBe("gapped");
    // Acknowledged bytes survive, in order, with nothing made up after them.
    expect(after.body.startsWith(before)).toBe(true);
    const lines = after.body.split("\n");
    const complete = lines.slice(0, -1);
    expect(complete).toEqual(complete.map((_, i) => `tick ${i + 1}`));
    const seen = await collectLog(`${p.base}/v1/jobs/${jobId}/logs/events`, t.token).done;
    expect(seen.terminal).toMatchObject({ event: "log.gapped", id: "1:end" });
    expect(seen.stdout.toString()).toBe(after.body);
  }, 120_000);

  it("ingest over HTTP: identical retries are idempotent, conflicting bytes get 409 LOG.CONFLICT, a fenced epoch gets 409 ATTEMPT.STALE_EPOCH", async () => {
    const { t, runId, jobId, agent } = await startJob(
      "fence",
      `version: 1\njobs:\n  - name: slow\n    steps: ["echo starting; sleep 30"]\n`,
    );
    await p.waitForRun(runId, t.token, (x) => x.jobs[0]?.status === "running");
    // Freeze the agent: its attempt keeps a live lease for a few seconds, long enough to speak for it.
    agent.child.kill("SIGSTOP");
    const attempts = await p.db.$queryRaw<
      { id: string; epoch: number }[]
    >`SELECT id, epoch FROM attempt WHERE job_id = ${jobId}::uuid`;
    const a = attempts[0]!;
    const token = signJobToken(await platformKey(p.db), { jobId, attemptId: a.id, epoch: a.epoch });
    const post = (body: unknown) => p.api("POST", `/v1/agent/jobs/${jobId}/logs`, token, body);
    const head = await p.db.$queryRaw<
      { next_seq: number; stdout_bytes: bigint }[]
    >`SELECT next_seq, stdout_bytes FROM log_attempt WHERE attempt_id = ${a.id}::uuid`;
    const seq = head[0]?.next_seq ?? 0;
    const offset = Number(head[0]?.stdout_bytes ?? 0n);
    const mine = chunk(seq, offset, "written by the test\n");
    const first = await post({ epoch: 1, chunks: [mine] });
    expect(first).toMatchObject({ status: 200, json: { next_seq: seq + 1, stored: 1, duplicates: 0 } });
    expect(await post({ epoch: 1, chunks: [mine] })).toMatchObject({
      status: 200,
      json: { next_seq: seq + 1, stored: 0, duplicates: 1 },
    });
    const conflict = await post({ epoch: 1, chunks: [chunk(seq, offset, "other bytes, same place\n")] });
    expect(conflict).toMatchObject({ status: 409, json: { error: { code: "LOG.CONFLICT" } } });
    expect(await post({ epoch: 1, chunks: [{ ...mine, sha256: "0".repeat(64) }] })).toMatchObject({
      status: 400,
      json: { error: { code: "REQUEST.INVALID" } },
    });
    expect(await post({ epoch: 2, chunks: [mine] })).toMatchObject({
      status: 409,
      json: { error: { code: "ATTEMPT.STALE_EPOCH" } },
    });

    // The lease runs out; the reconciler fences epoch 1 and marks its log gapped.
    await p.waitForRun(runId, t.token, (x) => x.jobs[0]?.attempts[0]?.status === "completed", 20_000);
    const late = await post({ epoch: 1, chunks: [chunk(seq + 1, offset + 20, "zombie output\n")] });
    expect(late).toMatchObject({ status: 409, json: { error: { code: "ATTEMPT.STALE_EPOCH" } } });
    const seal = await p.api("POST", `/v1/agent/jobs/${jobId}/logs/seal`, token, {
      epoch: 1,
      next_seq: seq + 1,
      bytes: { stdout: offset + 20, stderr: 0 },
      dropped_bytes: { stdout: 0, stderr: 0 },
    });
    expect(seal).toMatchObject({ status: 409, json: { error: { code: "ATTEMPT.STALE_EPOCH" } } });
    const stored = await rawLog(jobId, t.token);
    expect(stored.state).toBe("gapped");
    expect(stored.body.endsWith("written by the test\n")).toBe(true);
    expect(stored.body.includes("zombie")).toBe(false);
    agent.child.kill("SIGKILL");
  }, 120_000);
});
