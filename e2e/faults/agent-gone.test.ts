import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FaultStack, sleep, type Tenant } from "./support/harness.ts";
import { StepWatch } from "./support/step-watch.ts";

// Failure table row 3, "Agent disappears after early queue ACK": the dispatch hint was consumed when
// the agent claimed, so nothing will come back from the queue. The control plane reconciles the
// durable lease instead: it expires, the reconciler fences the attempt (platform_failure,
// lease.expired) before a replacement can be claimed, and another agent runs the replacement.
const TTL_MS = 8000;
let s: FaultStack;
let t: Tenant;

const workflow = (n: number) => `version: 1
jobs:
  - name: work
    steps:
      - for i in $(seq 1 ${n}); do echo "$KILN_ATTEMPT $i"; sleep 0.25; done
`;

beforeAll(async () => {
  s = await FaultStack.create({ env: { KILN_LEASE_TTL_MS: String(TTL_MS), KILN_HEARTBEAT_MS: "1000" } });
  t = await s.seedTenant("gone", { ".kiln/workflow.yaml": workflow(12), ".kiln/long.yaml": workflow(80) });
  s.startWorkers();
  await s.startWeb();
}, 180_000);
afterAll(async () => {
  await s?.stop();
});

async function attemptRows(runId: string) {
  return s.db.$queryRaw<
    {
      epoch: number;
      host: string;
      outcome: string | null;
      cause: string | null;
      claimed_at: Date;
      finished_at: Date | null;
      lease_expires_at: Date;
      stopped_at: Date | null;
    }[]
  >`
    SELECT epoch, host, outcome, cause, claimed_at, finished_at, lease_expires_at, stopped_at FROM attempt WHERE run_id = ${runId}::uuid ORDER BY epoch`;
}

describe("agent gone after claim", () => {
  it("SIGKILL right after the claim: lease expires, attempt 1 is fenced (lease.expired), a replacement on another agent succeeds", async () => {
    s.startAgent("agent-a", t.agentToken);
    const r = await s.trigger(t, "gone-1");
    expect(r.status).toBe(202);
    const runId = r.json.run_id as string;
    await s.waitForSql(() => attemptRows(runId), 60_000, 10);
    await s.signal("agent-a", "SIGKILL");
    s.startAgent("agent-b", t.agentToken);
    const run = await s.waitForRun(runId, t.token, (x) => x.status === "completed", 90_000);
    const history = JSON.stringify(run.jobs[0].attempts.map((a: any) => [a.epoch, a.outcome, a.cause, a.host]));
    expect(run.outcome, history).toBe("success");
    expect(run.jobs[0].attempts[0], history).toMatchObject({
      epoch: 1,
      outcome: "platform_failure",
      cause: "lease.expired",
      host: "agent-a",
    });
    // The replacement on agent-b wins (on a loaded machine it may itself lose a lease first; every
    // attempt but the winner is then a platform failure, never a second success).
    const outcomes = run.jobs[0].attempts.map((a: any) => a.outcome);
    expect(
      outcomes.filter((o: string) => o === "success"),
      history,
    ).toHaveLength(1);
    expect(outcomes.at(-1), history).toBe("success");
    expect(run.jobs[0].attempts.at(-1).host, history).toBe("agent-b");
    const [first, second] = await attemptRows(runId);
    // Fenced only once its lease had run out (database time), and before the replacement was claimed.
    expect(first!.finished_at!.getTime()).toBeGreaterThanOrEqual(first!.lease_expires_at.getTime());
    expect(second!.claimed_at.getTime()).toBeGreaterThanOrEqual(first!.finished_at!.getTime());
    expect(first!.stopped_at?.getTime()).toBe(first!.lease_expires_at.getTime());
    await s.signal("agent-b", "SIGKILL");
  }, 150_000);

  // ADR 0004 records a fenced attempt as stopped at its lease expiry because "the agent's local
  // watchdog destroys the sandbox at the TTL". That holds while the agent process lives. When the
  // agent process itself dies (OOM kill, crash, SIGKILL) and the host does not, nothing kills the
  // step: it keeps running past the lease, next to the replacement attempt.
  it("an agent killed mid-step leaves no step running past the attempt's lease", async () => {
    // 60 s of output: long enough to outlive any lease in this test. The marker in its command line
    // lets the test watch the host's process table for it (the step cannot write outside its sandbox).
    const marker = `kiln-gone-step-${process.pid}`;
    const watch = new StepWatch(marker).start();
    const long = `version: 1
jobs:
  - name: work
    steps:
      - ": ${marker}; for i in $(seq 1 240); do echo $KILN_ATTEMPT $i; sleep 0.25; done"
`;
    const sha = await t.git.commit({ ".kiln/long.yaml": long });
    s.startAgent("agent-c", t.agentToken);
    const r = await s.trigger(t, "gone-2", { workflowPath: ".kiln/long.yaml", sha });
    const runId = r.json.run_id as string;
    const deadline = Date.now() + 60_000;
    while (watch.seenForMs(1) < 500 && Date.now() < deadline) await sleep(50);
    await s.signal("agent-c", "SIGKILL");
    try {
      const [a] = await s.waitForSql(
        async () => (await attemptRows(runId)).filter((x) => x.outcome !== null),
        60_000,
        100,
      );
      expect(a).toMatchObject({ epoch: 1, outcome: "platform_failure", cause: "lease.expired" });
      // The control plane now records the step as stopped at its lease expiry. Was it?
      await sleep(2_000);
      const bound = a!.stopped_at!.getTime() + 500; // the watchdog checks a few times a second
      expect(watch.lastSeenAt(1), "attempt 1's step was never seen").not.toBeNull();
      expect(
        watch.lastSeenAt(1)! - bound,
        `ms attempt 1's step ran past its recorded stop (${a!.stopped_at!.toISOString()})`,
      ).toBeLessThanOrEqual(0);
    } finally {
      watch.stop();
      // A restarted agent sweeps its work dir (removeLeftovers) and kills what it finds.
      s.startAgent("agent-c2", t.agentToken, { env: { KILN_WORK_DIR: path.join(s.dataDir, "agent-c") } });
      await s.api("POST", `/v1/workflow-runs/${runId}/cancel`, t.token);
    }
  }, 180_000);
});
