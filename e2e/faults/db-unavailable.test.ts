import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FaultStack, sleep, type ApiResult, type Tenant } from "./support/harness.ts";
import { StepWatch } from "./support/step-watch.ts";

// Failure table row "Database is unavailable": PostgreSQL is the authority, so while it is down
// nothing authoritative may happen — no claim, no advancement, no outcome guessed from the queue or
// from what an agent last said. This test runs its own embedded PostgreSQL (the shared test server
// must stay up) and stops it while a job runs. The expected behaviour, from docs/adr/0004:
//  - /healthz and every API call answer 503 {error: {code: SERVICE.UNAVAILABLE, message}}: never a
//    500, never a 2xx with a state read from anywhere else;
//  - the agent keeps the sandbox while its lease may still be live (a failed heartbeat alone is not
//    a verdict), and its watchdog destroys it once the lease can no longer have been renewed: TTL
//    after the last heartbeat that succeeded, so no later than TTL after the outage starts;
//  - after PostgreSQL returns on the same data directory and port, every process resumes without a
//    restart; the reconciler fences attempt 1 (platform_failure, lease.expired) and a replacement
//    runs; the run ends success only through the replacement's committed completion. Requests that
//    got a 503 are retried with the same delivery id / Idempotency-Key and give exactly one run each.
const TTL_MS = 6000;
const HEARTBEAT_MS = 1000;
let s: FaultStack;
let t: Tenant;
// The step's command line carries this marker: the test watches the host's process table for it.
const MARKER = `kiln-outage-step-${process.pid}`;
const watch = new StepWatch(MARKER);

beforeAll(async () => {
  s = await FaultStack.create({
    ownPostgres: true,
    env: { KILN_LEASE_TTL_MS: String(TTL_MS), KILN_HEARTBEAT_MS: String(HEARTBEAT_MS) },
  });
  const workflow = `version: 1
jobs:
  - name: work
    steps:
      - ": ${MARKER}; for i in $(seq 1 40); do echo $KILN_ATTEMPT $i; sleep 0.25; done"
`;
  watch.start();
  t = await s.seedTenant("outage", { ".kiln/workflow.yaml": workflow });
  s.startWorkers();
  await s.startWeb();
  s.startAgent("agent-1", t.agentToken, { env: { KILN_AGENT_SLOTS: "1" } });
}, 240_000);
afterAll(async () => {
  watch.stop();
  await s?.stop();
});

function expectUnavailable(r: ApiResult, what: string) {
  expect([what, r.status, r.json?.error?.code, typeof r.json?.error?.message]).toEqual([
    what,
    503,
    "SERVICE.UNAVAILABLE",
    "string",
  ]);
}

describe("database unavailable", () => {
  it("pauses claims and advancement, answers 503, the watchdog stops the step; everything resumes and the outcome is honest", async () => {
    const r = await s.trigger(t, "before-outage");
    expect(r.status).toBe(202);
    const runId = r.json.run_id as string;
    const deadline = Date.now() + 60_000;
    while (watch.seenForMs(1) < 1000 && Date.now() < deadline) await sleep(50);
    expect(watch.seenForMs(1), "attempt 1's step ran for a second").toBeGreaterThanOrEqual(1000);

    const agent = s.proc("agent-1");
    const agentLogFrom = agent.output().length;
    // The lease as last renewed: the agent's watchdog runs out no earlier than this minus one
    // heartbeat's latency (it counts from when that heartbeat was sent), and no later than TTL after
    // the outage starts (no heartbeat can succeed after that).
    const [lease] = await s.db.$queryRaw<
      { lease_expires_at: Date }[]
    >`SELECT lease_expires_at FROM attempt WHERE run_id = ${runId}::uuid AND epoch = 1`;
    await s.db.$disconnect();
    const stoppedAt = Date.now();
    await s.stopPostgres();

    // The API: 503 with the error envelope, for reads, writes, webhooks and health alike.
    const health = await fetch(`${s.baseUrl()}/healthz`);
    expect(health.status).toBe(503);
    expect(await health.json()).toMatchObject({ ok: false, error: { code: "SERVICE.UNAVAILABLE" } });
    expectUnavailable(await s.api("GET", `/v1/workflow-runs/${runId}`, t.token), "get run");
    expectUnavailable(await s.trigger(t, "during-outage"), "manual trigger");
    expectUnavailable(await s.webhook(t, "delivery-during-outage"), "webhook");
    expectUnavailable(await s.api("POST", `/v1/workflow-runs/${runId}/cancel`, t.token), "cancel");

    // The step keeps running while its lease may still be live ...
    const stillLive = lease!.lease_expires_at.getTime() - 2_000;
    if (stillLive > Date.now() + 500) {
      await sleep(stillLive - Date.now());
      expect(await watch.runningNow(1), "the step was killed while its lease was still live").toBe(true);
    }
    // ... and is killed by the watchdog once it cannot have been renewed.
    const bound = stoppedAt + TTL_MS + HEARTBEAT_MS + 1500;
    await sleep(Math.max(0, bound - Date.now()) + 1500);
    expect(watch.lastSeenAt(1), "attempt 1's step was never seen").not.toBeNull();
    expect(
      watch.lastSeenAt(1)! - bound,
      "the step still ran after its lease could no longer be renewed (ms past the bound)",
    ).toBeLessThanOrEqual(0);
    const agentLog = agent.output().slice(agentLogFrom);
    expect(agentLog).toMatch(/"msg":"heartbeat failed"/);
    expect(agentLog).toMatch(/"msg":"stopping attempt".*"reason":"lease_lost"/);
    expect(agentLog).toMatch(/"msg":"sandbox destroyed"/);
    expect(agentLog).not.toMatch(/"msg":"completion accepted"/);
    // Still unavailable, still honest, for as long as it lasts.
    expectUnavailable(await s.api("GET", `/v1/workflow-runs/${runId}`, t.token), "get run, later");
    const restartedAt = Date.now();
    await s.startPostgres();

    // Everything resumes without restarting a process.
    await s.waitHealthy("web", 60_000);
    const retriedTrigger = await retry(() => s.trigger(t, "during-outage"));
    const retriedHook = await retry(() => s.webhook(t, "delivery-during-outage"));
    expect(retriedTrigger.status).toBe(202);
    expect(retriedHook.status).toBe(202);
    const run = await s.waitForRun(runId, t.token, (x) => x.status === "completed", 120_000);
    expect(run.outcome).toBe("success");
    expect(run.jobs[0].attempts.map((a: any) => [a.epoch, a.outcome, a.cause])).toEqual([
      [1, "platform_failure", "lease.expired"],
      [2, "success", null],
    ]);
    for (const id of [retriedTrigger.json.run_id, retriedHook.json.run_id]) {
      expect((await s.waitForRun(id, t.token, (x) => x.status === "completed", 120_000)).outcome).toBe("success");
    }
    const rows = await s.db.$queryRaw<{ runs: bigint; claimed_during: bigint; moved_during: bigint }[]>`
      SELECT (SELECT count(*) FROM workflow_run) AS runs,
             (SELECT count(*) FROM attempt WHERE claimed_at BETWEEN ${new Date(stoppedAt)} AND ${new Date(restartedAt)}) AS claimed_during,
             (SELECT count(*) FROM transition_event WHERE at BETWEEN ${new Date(stoppedAt + 1000)} AND ${new Date(restartedAt)}) AS moved_during`;
    expect(rows[0]).toEqual({ runs: 3n, claimed_during: 0n, moved_during: 0n });
    for (const name of ["web", "workers", "agent-1"]) expect([name, s.proc(name).alive()]).toEqual([name, true]);
  }, 300_000);
});

/** Retries a request while the control plane is still coming back (transport error or 503). */
async function retry(fn: () => Promise<ApiResult>): Promise<ApiResult> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const r = await fn().catch(() => null);
    if (r && r.status !== 503) return r;
    if (Date.now() > deadline) throw new Error(`still unavailable: ${JSON.stringify(r)}`);
    await sleep(500);
  }
}
