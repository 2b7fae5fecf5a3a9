import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FaultStack, sleep, type Tenant } from "./support/harness.ts";

// Failure table row 2, "Relay crashes after publishing": the outbox relay publishes dispatch hints
// and then marks the rows, inside one transaction. A crash between the two leaves the rows unmarked,
// so they are published again after the restart; the claim transaction (job READY under the offered
// dispatch generation) absorbs the duplicates. Every job still runs exactly once.
let s: FaultStack;
let t: Tenant;

const FANOUT = `version: 1
jobs:
  - name: a
    needs: []
    steps: ["sleep 0.2"]
  - name: b
    needs: []
    steps: ["sleep 0.2"]
  - name: c
    needs: []
    steps: ["sleep 0.2"]
  - name: join
    needs: [a, b, c]
    steps: ["true"]
`;
// Test-only fault injection, installed in this test's own database: marking a job.dispatch row as
// published waits for an advisory lock the test holds. The relay has published by then.
const STALL_FN = `
CREATE FUNCTION faults_stall_relay_mark() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.published_at IS NOT NULL AND OLD.published_at IS NULL AND NEW.topic = 'job.dispatch' THEN
    PERFORM pg_advisory_xact_lock(727001);
  END IF;
  RETURN NEW;
END $$`;
const STALL_TRIGGER =
  "CREATE TRIGGER faults_stall_relay_mark BEFORE UPDATE ON outbox FOR EACH ROW EXECUTE FUNCTION faults_stall_relay_mark()";

beforeAll(async () => {
  // FIFO: the policy under which dispatch hints are pg-boss jobs the claim consumes (under the fair
  // policy the relay only NOTIFYs, ADR 0009, and there is nothing to duplicate but a wake-up).
  s = await FaultStack.create({ env: { KILN_DISPATCH_POLICY: "fifo" } });
  t = await s.seedTenant("relay", { ".kiln/workflow.yaml": FANOUT });
  s.startWorkers();
  await s.startWeb();
  s.startAgent("agent-1", t.agentToken);
  s.startAgent("agent-2", t.agentToken);
}, 180_000);
afterAll(async () => {
  await s?.stop();
});

interface Published {
  job_id: string;
  generation: number;
  copies: bigint;
}

/** Dispatch hints pg-boss received for a run, per (job, generation). */
async function published(runId: string): Promise<Published[]> {
  return s.db.$queryRawUnsafe<Published[]>(
    `SELECT data->>'jobId' AS job_id, (data->>'generation')::int AS generation, count(*) AS copies
     FROM pgboss.job WHERE name = 'dispatch-default' AND data->>'runId' = $1 GROUP BY 1, 2`,
    runId,
  );
}

async function attemptsPerJob(runIds: string[]) {
  return s.db.$queryRaw<
    { job_id: string; name: string; outcome: string | null; attempts: bigint; successes: bigint }[]
  >`
    SELECT j.id AS job_id, j.name, j.outcome, count(a.id) AS attempts, count(a.id) FILTER (WHERE a.outcome = 'success') AS successes
    FROM job_run j LEFT JOIN attempt a ON a.job_id = j.id WHERE j.run_id = ANY(${runIds}::uuid[]) GROUP BY j.id, j.name, j.outcome`;
}

describe("relay crash", () => {
  it("workers SIGKILLed after publishing and before marking: hints are republished, each job runs once", async () => {
    await s.db.$executeRawUnsafe(STALL_FN);
    await s.db.$executeRawUnsafe(STALL_TRIGGER);
    const holder = new pg.Client({ connectionString: s.dbUrl });
    await holder.connect();
    try {
      await holder.query("SELECT pg_advisory_lock(727001)");
      const r = await s.trigger(t, "relay-window");
      expect(r.status).toBe(202);
      const runId = r.json.run_id as string;
      // The relay published the three root jobs' hints and is now stuck marking them.
      await s.waitForSql(async () => ((await published(runId)).length === 3 ? [true] : []), 60_000);
      await s.signal("workers", "SIGKILL");
      await holder.query("SELECT pg_advisory_unlock(727001)");
      // The killed relay's transaction rolls back: the rows were published but are not marked.
      await s.waitForSql(
        () => s.db.$queryRaw<{ n: bigint }[]>`
        SELECT count(*) AS n FROM outbox WHERE topic = 'job.dispatch' AND payload->>'runId' = ${runId} AND published_at IS NULL
        HAVING count(*) = 3`,
        10_000,
      );
      await s.restart("workers");
      const run = await s.waitForRun(runId, t.token, (x) => x.status === "completed", 90_000);
      expect(run.outcome).toBe("success");
      // Claims do not need hints (they scan READY jobs), so the run may finish before the restarted
      // relay is up. Wait for it to republish the unmarked rows and for the claims to consume them.
      await s.waitForSql(
        () => s.db.$queryRaw<{ n: bigint }[]>`
        SELECT count(*) AS n FROM outbox WHERE payload->>'runId' = ${runId} HAVING count(*) FILTER (WHERE published_at IS NULL) = 0`,
        60_000,
      );
      await s.waitForSql(
        () =>
          s.db.$queryRawUnsafe<{ n: bigint }[]>(
            `SELECT count(*) AS n FROM pgboss.job WHERE name = 'dispatch-default' AND data->>'runId' = $1 HAVING count(*) FILTER (WHERE state <> 'completed') = 0`,
            runId,
          ),
        30_000,
      );
      const roots = (await published(runId)).filter((h) => run.jobs.slice(0, 3).some((j: any) => j.id === h.job_id));
      // Each root job's hint went out twice (before the crash and after the restart) ...
      expect(roots.map((h) => [h.generation, Number(h.copies)])).toEqual([
        [1, 2],
        [1, 2],
        [1, 2],
      ]);
      // ... the claims refused the duplicates, and each job ran exactly once.
      for (const j of await attemptsPerJob([runId]))
        expect([j.name, j.outcome, Number(j.attempts), Number(j.successes)]).toEqual([j.name, "success", 1, 1]);
    } finally {
      await holder.end();
      await s.db.$executeRawUnsafe("DROP TRIGGER IF EXISTS faults_stall_relay_mark ON outbox");
    }
  }, 150_000);

  it("workers SIGKILLed three times during a burst of 8 runs (32 jobs): none lost, none run twice", async () => {
    const ids: string[] = [];
    const burst = (async () => {
      for (let i = 0; i < 8; i++) {
        for (;;) {
          const r = await s.trigger(t, `burst-${i}`).catch(() => null);
          if (r?.status === 202) {
            ids.push(r.json.run_id);
            break;
          }
          await sleep(200);
        }
        await sleep(100);
      }
    })();
    for (const delay of [400, 900, 1500]) {
      await sleep(delay);
      await s.signal("workers", "SIGKILL");
      await sleep(300);
      await s.restart("workers");
    }
    await burst;
    // An interrupted freeze is re-sent by the reconciler (refreezeAfterMs, 30 s), so allow for that.
    for (const id of ids) {
      const run = await s.waitForRun(id, t.token, (x) => x.status === "completed", 150_000);
      expect(run.outcome).toBe("success");
    }
    const jobs = await attemptsPerJob(ids);
    expect(jobs).toHaveLength(32);
    for (const j of jobs)
      expect([j.name, j.outcome, Number(j.attempts), Number(j.successes)]).toEqual([j.name, "success", 1, 1]);
    const unmarked = await s.db.$queryRaw<
      { n: bigint }[]
    >`SELECT count(*) AS n FROM outbox WHERE published_at IS NULL AND deliver_after < now() - interval '5 seconds'`;
    expect(Number(unmarked[0]?.n)).toBe(0);
  }, 240_000);
});
