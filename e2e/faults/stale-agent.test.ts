import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { REPO_ROOT as ROOT } from "@kiln/testkit";
import { FaultStack, type Tenant } from "./support/harness.ts";
import { ProtocolAgent, type Ticket } from "./support/protocol-agent.ts";

// Failure table row 4, "Old agent reports after replacement". e2e/fencing.test.ts covers the real
// agent frozen with SIGSTOP and resumed with SIGCONT (it learns it was fenced, destroys its sandbox,
// reports nothing). This file drives the old agent at the protocol level instead, so that every
// kind of late publication is actually sent with the fenced attempt's genuine job token, both while
// the replacement is still running and after it won, and checks the control plane refuses each one
// and changes nothing ("accept whichever success arrives last" is the shortcut).
const AGENT_JOBS = "apps/web/src/app/v1/agent/jobs/[jobId]";
const HAS_LOGS = existsSync(path.join(ROOT, AGENT_JOBS, "logs/route.ts"));
const HAS_ARTIFACTS = existsSync(path.join(ROOT, AGENT_JOBS, "artifacts/uploads/route.ts"));

const WORKFLOW = `version: 1
jobs:
  - name: build
    steps: ["sleep 3", "mkdir -p out && echo \\"built by attempt $KILN_ATTEMPT\\" > out/app.txt"]
${HAS_ARTIFACTS ? "    artifacts:\n      publish:\n        - {name: app, path: out/app.txt}\n" : ""}`;

let s: FaultStack;
let t: Tenant;

beforeAll(async () => {
  s = await FaultStack.create({
    env: { KILN_LEASE_TTL_MS: "8000", KILN_HEARTBEAT_MS: "1000", KILN_ARTIFACT_PART_MIB: "5" },
  });
  t = await s.seedTenant("stale", { ".kiln/workflow.yaml": WORKFLOW });
  s.startWorkers();
  await s.startWeb();
}, 180_000);
afterAll(async () => {
  await s?.stop();
});

const sha256 = (b: Buffer) => createHash("sha256").update(b).digest("hex");
const STALE_BYTES = Buffer.from("bytes staged by the fenced attempt\n");

/** What an outsider can observe of the run: its state, and every transition it has been through. */
async function snapshot(runId: string) {
  const run = await s.api("GET", `/v1/workflow-runs/${runId}`, t.token);
  const events = await s.db.$queryRaw<
    { n: bigint }[]
  >`SELECT count(*) AS n FROM transition_event WHERE run_id = ${runId}::uuid AND entity <> 'log'`;
  return { run: run.json, events: Number(events[0]?.n) };
}

async function fencedSide(runId: string, attemptId: string) {
  const run = (await s.api("GET", `/v1/workflow-runs/${runId}`, t.token)).json;
  const rows = await s.db.$queryRaw<{ n: bigint; epoch: number; status: string }[]>`
    SELECT (SELECT count(*) FROM transition_event WHERE attempt_id = ${attemptId}::uuid AND entity <> 'log') AS n, current_epoch AS epoch, status
    FROM job_run WHERE run_id = ${runId}::uuid`;
  return { attempt: run.jobs[0].attempts[0], events: Number(rows[0]?.n), job: [rows[0]?.epoch, rows[0]?.status] };
}

/** Every publication the fenced attempt can still try; each must be refused with 409. */
async function lateCalls(old: ProtocolAgent, ticket: Ticket, staged: { generationId: string } | null) {
  const calls: [string, Promise<{ status: number; json: any }>][] = [
    ["heartbeat", old.heartbeat(ticket)],
    ["complete success", old.complete(ticket, "success", { exit_code: 0 })],
    ["complete user_failure", old.complete(ticket, "user_failure", { exit_code: 1 })],
  ];
  if (HAS_LOGS) {
    const data = Buffer.from("late output\n");
    calls.push([
      "log append",
      old.jobCall(ticket, "/logs", {
        epoch: ticket.epoch,
        chunks: [
          {
            stream: "stdout",
            seq: 1,
            offset: 6,
            length: data.length,
            sha256: sha256(data),
            data: data.toString("base64"),
          },
        ],
      }),
    ]);
  }
  if (HAS_ARTIFACTS && staged) {
    calls.push([
      "artifact complete",
      old.jobCall(ticket, `/artifacts/uploads/${staged.generationId}/complete`, { epoch: ticket.epoch }),
    ]);
    calls.push([
      "artifact open",
      old.jobCall(ticket, "/artifacts/uploads", {
        epoch: ticket.epoch,
        name: "app",
        size_bytes: STALE_BYTES.length,
        sha256: sha256(STALE_BYTES),
        format: "file",
      }),
    ]);
  }
  const out: [string, number, string][] = [];
  for (const [name, p] of calls) {
    const r = await p;
    out.push([name, r.status, r.json?.error?.code]);
  }
  return out;
}

/** Before going silent, the old agent stages what a real one would: a log chunk and artifact bytes. */
async function stageWork(old: ProtocolAgent, ticket: Ticket): Promise<{ generationId: string } | null> {
  if (HAS_LOGS) {
    const data = Buffer.from("early\n");
    const r = await old.jobCall(ticket, "/logs", {
      epoch: ticket.epoch,
      chunks: [
        {
          stream: "stdout",
          seq: 0,
          offset: 0,
          length: data.length,
          sha256: sha256(data),
          data: data.toString("base64"),
        },
      ],
    });
    expect(r.status).toBe(200);
  }
  if (!HAS_ARTIFACTS) return null;
  const open = await old.jobCall(ticket, "/artifacts/uploads", {
    epoch: ticket.epoch,
    name: "app",
    size_bytes: STALE_BYTES.length,
    sha256: sha256(STALE_BYTES),
    format: "file",
  });
  expect(open.status).toBe(200);
  const part = open.json.parts[0];
  const put = await fetch(part.url, { method: "PUT", body: STALE_BYTES });
  expect(put.ok).toBe(true);
  const rec = await old.jobCall(ticket, `/artifacts/uploads/${open.json.generation_id}/parts`, {
    epoch: ticket.epoch,
    part_number: 1,
    size_bytes: STALE_BYTES.length,
    sha256: sha256(STALE_BYTES),
    etag: put.headers.get("etag") ?? "",
  });
  expect(rec.status).toBe(200);
  return { generationId: open.json.generation_id };
}

describe("old agent reporting after its replacement", () => {
  it("every late call of the fenced attempt is refused, during and after the replacement, and nothing changes", async () => {
    const old = new ProtocolAgent(s.baseUrl(), t.agentToken, "old-agent");
    await old.register();
    const r = await s.trigger(t, "stale-1");
    const runId = r.json.run_id as string;
    const ticket = (await old.claim(60_000))!;
    expect(ticket.epoch).toBe(1);
    expect((await old.heartbeat(ticket)).status).toBe(200);
    const staged = await stageWork(old, ticket);
    // The old agent goes silent; its lease runs out and the reconciler fences epoch 1.
    await s.waitForRun(runId, t.token, (x) => x.jobs[0]?.attempts[0]?.status === "completed", 30_000);
    s.startAgent("new-agent", t.agentToken);
    await s.waitForRun(runId, t.token, (x) => x.jobs[0]?.attempts[1]?.status === "running", 60_000);

    // While the replacement runs: refused, and neither the fenced attempt nor the job moves (the
    // replacement's own heartbeats do change the run, so only the fenced side is compared).
    const during = await fencedSide(runId, ticket.attemptId);
    const refusedDuring = await lateCalls(old, ticket, staged);
    for (const [name, status] of refusedDuring) expect([name, status]).toEqual([name, 409]);
    expect(await fencedSide(runId, ticket.attemptId)).toEqual(during);

    const done = await s.waitForRun(runId, t.token, (x) => x.status === "completed", 60_000);
    expect(done.outcome).toBe("success");
    expect(done.jobs[0].attempts.map((a: any) => [a.epoch, a.outcome, a.cause, a.host])).toEqual([
      [1, "platform_failure", "lease.expired", "old-agent"],
      [2, "success", null, "new-agent"],
    ]);

    // After the replacement won: the same, and the winner stays the winner.
    const after = await snapshot(runId);
    const refusedAfter = await lateCalls(old, ticket, staged);
    for (const [name, status, code] of refusedAfter)
      expect([name, status, code]).toEqual([
        name,
        409,
        expect.stringMatching(/^ATTEMPT\.(STALE_EPOCH|LEASE_EXPIRED)$/),
      ]);
    expect(await snapshot(runId)).toEqual(after);

    if (HAS_ARTIFACTS) {
      // The stale attempt's staged bytes are isolated: never bound, never served.
      const bound = await s.db.$queryRaw<{ epoch: number; generation_id: string }[]>`
        SELECT g.epoch, b.generation_id FROM artifact_binding b JOIN artifact_generation g ON g.id = b.generation_id WHERE b.run_id = ${runId}::uuid`;
      expect(bound.map((b) => b.epoch)).toEqual([2]);
      expect(bound[0]!.generation_id).not.toBe(staged!.generationId);
      const served = await fetch(`${s.baseUrl()}/v1/jobs/${done.jobs[0].id}/artifacts/app`, {
        headers: { authorization: `Bearer ${t.token}` },
      });
      expect(await served.text()).toBe("built by attempt 2\n");
    }
    if (HAS_LOGS) {
      // The fenced attempt's acknowledged chunk is kept, and its log is marked gapped, never complete.
      const raw = await fetch(`${s.baseUrl()}/v1/jobs/${done.jobs[0].id}/logs/raw?attempt=1`, {
        headers: { authorization: `Bearer ${t.token}` },
      });
      expect(raw.headers.get("x-kiln-log-state")).toBe("gapped");
      expect(await raw.text()).toBe("early\n");
    }
  }, 180_000);
});
