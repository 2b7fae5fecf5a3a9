import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FaultStack, sleep, type Tenant } from "./support/harness.ts";

// Failure table row "Log ingestion stalls" (issue 4's logs). e2e/logs-failures.test.ts covers the
// size limit (truncated) and an agent killed mid-stream (gapped). Here ingestion itself stalls while
// the job keeps printing: the test holds the attempt's log_attempt row lock, which every ingest
// transaction takes first, so appends hang exactly as under a stuck journal. Expected (ADR 0006): the
// step is never blocked by it (spool, bounded memory), heartbeats are unaffected; a stall shorter
// than the drain deadline loses nothing and the log is sealed byte for byte; a longer one ends with
// the job's outcome published and the log marked gapped, holding exactly the acknowledged bytes.
const LINE = "stall test - every byte acknowledged must survive and no unacknowledged byte may be claimed\n";
const BLOCK = 100_000;
const BLOCKS = 40;
const EXPECTED = Buffer.from(
  LINE.repeat(Math.ceil(BLOCK / LINE.length))
    .slice(0, BLOCK)
    .repeat(BLOCKS),
);
const WORKFLOW = `version: 1
jobs:
  - name: chatty
    steps:
      - for i in $(seq 1 ${BLOCKS}); do yes '${LINE.trimEnd()}' | head -c ${BLOCK}; sleep 0.05; done
`;

let s: FaultStack;
let t: Tenant;

beforeAll(async () => {
  s = await FaultStack.create({ env: { KILN_LEASE_TTL_MS: "10000", KILN_HEARTBEAT_MS: "1000" } });
  t = await s.seedTenant("stall", { ".kiln/workflow.yaml": WORKFLOW });
  s.startWorkers();
  await s.startWeb();
}, 180_000);
afterAll(async () => {
  await s?.stop();
});

/** Holds the attempt's log row lock (stalling its ingest) until release() is called. */
async function stallIngest(runId: string) {
  const [row] = await s.waitForSql(
    () => s.db.$queryRaw<{ attempt_id: string }[]>`
    SELECT attempt_id FROM log_attempt WHERE run_id = ${runId}::uuid AND stdout_bytes > 0`,
    60_000,
    10,
  );
  const c = new pg.Client({ connectionString: s.dbUrl });
  await c.connect();
  await c.query("BEGIN");
  await c.query("SELECT 1 FROM log_attempt WHERE attempt_id = $1 FOR UPDATE", [row!.attempt_id]);
  const acked = async () =>
    Number(
      (
        await s.db.$queryRaw<
          { n: bigint }[]
        >`SELECT stdout_bytes AS n FROM log_attempt WHERE attempt_id = ${row!.attempt_id}::uuid`
      )[0]?.n,
    );
  return {
    attemptId: row!.attempt_id,
    acked,
    release: async () => {
      await c.query("COMMIT");
      await c.end();
    },
  };
}

async function raw(jobId: string) {
  const r = await fetch(`${s.baseUrl()}/v1/jobs/${jobId}/logs/raw?stream=stdout&attempt=1`, {
    headers: { authorization: `Bearer ${t.token}` },
  });
  return { state: r.headers.get("x-kiln-log-state"), bytes: Buffer.from(await r.arrayBuffer()) };
}

/** The agent's log as one line per event: time, message, epoch and the fields that explain it. */
function timeline(name: string): string {
  return s
    .proc(name)
    .output()
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => {
      const e = JSON.parse(l) as Record<string, unknown>;
      return [e.ts, e.msg, e.epoch, e.reason, e.error, e.code].filter((x) => x !== undefined).join(" ");
    })
    .join("\n");
}

const history = (run: any) =>
  JSON.stringify(run.jobs[0].attempts.map((a: any) => [a.epoch, a.outcome, a.cause, a.cause_message]));

async function waitForOutput(name: string, from: number, re: RegExp, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!re.test(s.proc(name).output().slice(from))) {
    if (Date.now() > deadline) throw new Error(`${name} never logged ${re}\n${s.logs([name])}`);
    await sleep(100);
  }
}

describe("log ingestion stalls", () => {
  it("a stall shorter than the drain deadline: the step is not slowed, nothing is lost, the log is sealed byte for byte", async () => {
    const agent = s.startAgent("agent-1", t.agentToken, { env: { KILN_LOG_MEMORY_BYTES: String(256 * 1024) } });
    const r = await s.trigger(t, "short-stall");
    const stall = await stallIngest(r.json.run_id);
    const ackedAtStall = await stall.acked();
    // The step finishes while ingestion is stuck: output goes to the spool, the pipe never blocks.
    await waitForOutput("agent-1", 0, /"msg":"step finished"/, 60_000);
    expect(await stall.acked()).toBe(ackedAtStall);
    expect(ackedAtStall).toBeLessThan(EXPECTED.length);
    await sleep(2_000); // heartbeats carry on meanwhile; the lease must not be lost
    await stall.release();
    const run = await s.waitForRun(r.json.run_id, t.token, (x) => x.status === "completed", 90_000);
    expect([run.outcome, run.jobs[0].attempts.length], history(run)).toEqual(["success", 1]);
    const log = await raw(run.jobs[0].id);
    expect(log.state).toBe("sealed");
    expect(log.bytes.equals(EXPECTED)).toBe(true);
    await s.signal(agent.name, "SIGKILL");
    // Its claim long-poll (KILN_CLAIM_WAIT_MS=2000) may still be open at the web: let it lapse, or
    // the next test's job could be claimed for this dead agent (a lease expiry, not a log stall).
    await sleep(2_500);
  }, 180_000);

  it("a stall past the drain deadline: the outcome is published, the log is gapped and holds exactly the acknowledged bytes", async () => {
    s.startAgent("agent-2", t.agentToken, {
      env: { KILN_LOG_MEMORY_BYTES: String(256 * 1024), KILN_LOG_DRAIN_MS: "3000" },
    });
    const r = await s.trigger(t, "long-stall");
    const stall = await stallIngest(r.json.run_id);
    await waitForOutput("agent-2", 0, /"msg":"log not sealed; the control plane will mark it gapped"/, 90_000);
    // Completion marks the unsealed log gapped under the same row lock, so let it through now.
    await stall.release();
    const releasedAt = new Date().toISOString();
    const run = await s.waitForRun(r.json.run_id, t.token, (x) => x.status === "completed", 90_000);
    expect(
      [run.outcome, run.jobs[0].attempts.length],
      `${history(run)}\nreleased at ${releasedAt}\n${timeline("agent-2")}`,
    ).toEqual(["success", 1]);
    const acked = await stall.acked();
    const log = await raw(run.jobs[0].id);
    expect(log.state).toBe("gapped");
    expect(log.bytes.length).toBe(acked);
    expect(acked).toBeLessThan(EXPECTED.length);
    expect(log.bytes.equals(EXPECTED.subarray(0, acked))).toBe(true);
  }, 180_000);
});
