import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FaultStack, sleep, type Tenant } from "./support/harness.ts";
import { ProtocolAgent, type Ticket } from "./support/protocol-agent.ts";

// Failure table row "Cancel races with success": cancel and completion both take the run lock, so
// whichever commits first wins and the other is refused (docs/adr/0004). Driven at the HTTP level
// with a scripted agent so each order is forced, then raced for real.
const TTL_MS = 5000;
let s: FaultStack;
let t: Tenant;
let agent: ProtocolAgent;

beforeAll(async () => {
  s = await FaultStack.create({ env: { KILN_LEASE_TTL_MS: String(TTL_MS), KILN_HEARTBEAT_MS: "1000" } });
  t = await s.seedTenant("race", {
    ".kiln/workflow.yaml": 'version: 1\njobs:\n  - name: build\n    steps: ["true"]\n',
  });
  s.startWorkers();
  await s.startWeb();
  agent = new ProtocolAgent(s.baseUrl(), t.agentToken, "scripted");
  await agent.register();
}, 180_000);
afterAll(async () => {
  await s?.stop();
});

async function claimedRun(key: string): Promise<{ runId: string; ticket: Ticket }> {
  const r = await s.trigger(t, key);
  expect(r.status).toBe(202);
  const ticket = await agent.claim(60_000);
  expect(ticket?.runId).toBe(r.json.run_id);
  expect((await agent.heartbeat(ticket!)).status).toBe(200);
  return { runId: r.json.run_id, ticket: ticket! };
}

const cancel = (runId: string) => s.api("POST", `/v1/workflow-runs/${runId}/cancel`, t.token);
const view = async (runId: string) => (await s.api("GET", `/v1/workflow-runs/${runId}`, t.token)).json;

describe("cancel racing success", () => {
  it("cancel commits first: the late success is refused (409 RUN.CANCELLED) and nothing is published", async () => {
    const { runId, ticket } = await claimedRun("cancel-first");
    const c = await cancel(runId);
    expect(c.status).toBe(202);
    expect((await agent.heartbeat(ticket)).json).toMatchObject({ cancel_requested: true });
    const late = await agent.complete(ticket, "success", { exit_code: 0 });
    expect(late).toMatchObject({ status: 409, json: { error: { code: "RUN.CANCELLED" } } });
    const run = await view(runId);
    expect([run.status, run.outcome]).toEqual(["completed", "cancelled"]);
    expect([run.jobs[0].outcome, run.jobs[0].attempts[0].outcome, run.jobs[0].attempts[0].cause]).toEqual([
      "cancelled",
      "cancelled",
      "run.cancelled",
    ]);
  });

  it("success commits first: the late cancel is refused (409 RUN.ALREADY_FINISHED) and the run stays successful", async () => {
    const { runId, ticket } = await claimedRun("success-first");
    expect(await agent.complete(ticket, "success", { exit_code: 0 })).toMatchObject({
      status: 200,
      json: { accepted: true, job_outcome: "success" },
    });
    expect(await cancel(runId)).toMatchObject({ status: 409, json: { error: { code: "RUN.ALREADY_FINISHED" } } });
    const run = await view(runId);
    expect([run.status, run.outcome, run.jobs[0].attempts[0].outcome]).toEqual(["completed", "success", "success"]);
  });

  it("raced for real 12 times: exactly one side wins each time, and the run says which", async () => {
    const seen = { cancelWon: 0, successWon: 0 };
    for (let i = 0; i < 12; i++) {
      const { runId, ticket } = await claimedRun(`raced-${i}`);
      // Alternate which request leaves first, by a hair, so both orders get their chance.
      const [c, done] =
        i % 2 === 0
          ? await Promise.all([cancel(runId), agent.complete(ticket, "success", { exit_code: 0 })])
          : await Promise.all([agent.complete(ticket, "success", { exit_code: 0 }), cancel(runId)]).then(
              ([a, b]) => [b, a] as const,
            );
      const run = await view(runId);
      if (c.status === 202) {
        seen.cancelWon++;
        expect(done).toMatchObject({ status: 409, json: { error: { code: "RUN.CANCELLED" } } });
        expect([run.outcome, run.jobs[0].attempts[0].outcome]).toEqual(["cancelled", "cancelled"]);
      } else {
        seen.successWon++;
        expect(c).toMatchObject({ status: 409, json: { error: { code: "RUN.ALREADY_FINISHED" } } });
        expect(done).toMatchObject({ status: 200, json: { accepted: true, job_outcome: "success" } });
        expect([run.outcome, run.jobs[0].attempts[0].outcome]).toEqual(["success", "success"]);
      }
      expect(run.status).toBe("completed");
    }
    expect(seen.cancelWon + seen.successWon).toBe(12);
  }, 180_000);

  it("a silent attempt keeps the cancelled run CANCELLING until its lease runs out (lease age is not taken as proof it stopped early)", async () => {
    const { runId, ticket } = await claimedRun("cancel-silent");
    const c = await cancel(runId);
    expect(c.status).toBe(202);
    // The agent never answers again. Before the lease can have expired the run must still be open.
    await sleep(TTL_MS / 2);
    const mid = await view(runId);
    expect([mid.status, mid.jobs[0].attempts[0].status]).toEqual(["cancelling", "running"]);
    const run = await s.waitForRun(runId, t.token, (x) => x.status === "completed", 30_000);
    expect([run.outcome, run.jobs[0].attempts[0].outcome, run.jobs[0].attempts[0].cause]).toEqual([
      "cancelled",
      "cancelled",
      "run.cancelled",
    ]);
    const a = await s.db.$queryRaw<
      { stopped_at: Date; lease_expires_at: Date }[]
    >`SELECT stopped_at, lease_expires_at FROM attempt WHERE id = ${ticket.attemptId}::uuid`;
    // Recorded as stopped at its lease expiry: the agent's watchdog bound, not the cancel time.
    expect(a[0]!.stopped_at.getTime()).toBe(a[0]!.lease_expires_at.getTime());
  });
});
