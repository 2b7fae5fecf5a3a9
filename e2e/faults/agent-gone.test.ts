import { readFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FaultStack, sleep, type Tenant } from "./support/harness.ts";

// Failure table row 3, "Agent disappears after early queue ACK": the dispatch hint was consumed when
// the agent claimed, so nothing will come back from the queue. The control plane reconciles the
// durable lease instead: it expires, the reconciler fences the attempt (platform_failure,
// lease.expired) before a replacement can be claimed, and another agent runs the replacement.
const TTL_MS = 8000;
let s: FaultStack;
let t: Tenant;
let marks = "";

// Each step appends "<attempt epoch> <i>" to a file outside the sandbox, so the test can see which
// attempt's processes are still alive.
const workflow = (n: number) => `version: 1
jobs:
  - name: work
    env: { MARK: "${marks}" }
    steps:
      - for i in $(seq 1 ${n}); do echo "$KILN_ATTEMPT $i" >> "$MARK"; sleep 0.25; done
`;

beforeAll(async () => {
  s = await FaultStack.create({ env: { KILN_LEASE_TTL_MS: String(TTL_MS), KILN_HEARTBEAT_MS: "1000" } });
  marks = path.join(s.tmp, "marks");
  t = await s.seedTenant("gone", { ".kiln/workflow.yaml": workflow(12), ".kiln/long.yaml": workflow(80) });
  s.startWorkers();
  await s.startWeb();
}, 180_000);
afterAll(async () => {
  await s?.stop();
});

async function attemptRows(runId: string) {
  return s.db.$queryRaw<{ epoch: number; host: string; outcome: string | null; cause: string | null; claimed_at: Date; finished_at: Date | null; lease_expires_at: Date; stopped_at: Date | null }[]>`
    SELECT epoch, host, outcome, cause, claimed_at, finished_at, lease_expires_at, stopped_at FROM attempt WHERE run_id = ${runId}::uuid ORDER BY epoch`;
}

async function markLines(epoch: number, file = marks): Promise<number> {
  const text = await readFile(file, "utf8").catch(() => "");
  return text.split("\n").filter((l) => l.startsWith(`${epoch} `)).length;
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
    expect(run.jobs[0].attempts[0], history).toMatchObject({ epoch: 1, outcome: "platform_failure", cause: "lease.expired", host: "agent-a" });
    // The replacement on agent-b wins (on a loaded machine it may itself lose a lease first; every
    // attempt but the winner is then a platform failure, never a second success).
    const outcomes = run.jobs[0].attempts.map((a: any) => a.outcome);
    expect(outcomes.filter((o: string) => o === "success"), history).toHaveLength(1);
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
    // 60 s of "<epoch> <i> <epoch ms>" lines: long enough to outlive any lease in this test.
    const longMarks = `${marks}-long`;
    const long = `version: 1
jobs:
  - name: work
    env: { MARK: "${longMarks}" }
    steps:
      - for i in $(seq 1 240); do echo "$KILN_ATTEMPT $i $(date +%s%3N)" >> "$MARK"; sleep 0.25; done
`;
    const sha = await t.git.commit({ ".kiln/long.yaml": long });
    s.startAgent("agent-c", t.agentToken);
    const r = await s.trigger(t, "gone-2", { workflowPath: ".kiln/long.yaml", sha });
    const runId = r.json.run_id as string;
    const deadline = Date.now() + 60_000;
    while ((await markLines(1, longMarks)) < 2 && Date.now() < deadline) await sleep(50);
    await s.signal("agent-c", "SIGKILL");
    try {
      const [a] = await s.waitForSql(async () => (await attemptRows(runId)).filter((x) => x.outcome !== null), 60_000, 100);
      expect(a).toMatchObject({ epoch: 1, outcome: "platform_failure", cause: "lease.expired" });
      // The control plane now records the step as stopped at its lease expiry. Was it?
      await sleep(2_000);
      const text = await readFile(longMarks, "utf8");
      const stamps = text.split("\n").filter((l) => l.startsWith("1 ")).map((l) => Number(l.split(" ")[2]));
      const bound = a!.stopped_at!.getTime() + 500; // the watchdog checks a few times a second
      const after = stamps.filter((ms) => ms > bound);
      expect(after.length, `lines attempt 1's step wrote after its recorded stop (${a!.stopped_at!.toISOString()})`).toBe(0);
    } finally {
      // A restarted agent sweeps its work dir (removeLeftovers) and kills what it finds.
      s.startAgent("agent-c2", t.agentToken, { env: { KILN_WORK_DIR: path.join(s.tmp, "agent-c") } });
      await s.api("POST", `/v1/workflow-runs/${runId}/cancel`, t.token);
    }
  }, 180_000);
});
