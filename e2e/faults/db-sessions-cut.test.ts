import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FaultStack, sleep, type Tenant } from "./support/harness.ts";

// Failure table row "Database is unavailable", its most common form: every session is cut at once
// (a failover, a restart, an operator's pg_terminate_backend). Found by the chaos soak, where the
// workers process died on its own 6 times in 15 cuts with an unhandled 'error' event (57P01) on a
// node-postgres Client. Every process must treat a cut session as a failed request and carry on:
// a worker that exits on it stops the relay, the reconciler and the log archiver until someone
// restarts it. Cuts are repeated while jobs write big logs, so the log journal (its own pg pool,
// docs/adr/0006) is busy on both the web (ingest) and the workers (archiver) side.
let s: FaultStack;
let t: Tenant;

const WORKFLOW = `version: 1
jobs:
  - name: chatty
    steps: ["for i in $(seq 1 30); do yes 'session cut test line, long enough to fill chunks quickly' | head -c 200000; sleep 0.1; done"]
`;

beforeAll(async () => {
  // Small segments: the archiver commits a segment every few hundred kB, all the time.
  s = await FaultStack.create({
    env: { KILN_LOG_ARCHIVE_MS: "200", KILN_LOG_SEGMENT_BYTES: "65536", KILN_LOG_FLUSH_BYTES: "16384" },
  });
  t = await s.seedTenant("cuts", { ".kiln/workflow.yaml": WORKFLOW });
  s.startWorkers();
  await s.startWeb();
  s.startAgent("agent-1", t.agentToken, { env: { KILN_AGENT_SLOTS: "3" } });
}, 180_000);
afterAll(async () => {
  await s?.stop();
});

async function cutAllSessions(): Promise<number> {
  const c = new pg.Client({ connectionString: s.dbUrl });
  c.on("error", () => undefined);
  await c.connect();
  try {
    const r = await c.query(
      "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()",
    );
    return r.rowCount ?? 0;
  } finally {
    await c.end().catch(() => undefined);
  }
}

describe("database sessions cut", () => {
  it("30 cuts while logs are ingested and archived: no process exits, every run finishes", async () => {
    const runs = await Promise.all([1, 2, 3].map((i) => s.trigger(t, `cut-${i}`)));
    await s.waitForSql(
      () =>
        s.db.$queryRaw<
          { n: bigint }[]
        >`SELECT count(*) AS n FROM log_attempt WHERE stdout_bytes > 0 HAVING count(*) >= 2`,
      90_000,
      100,
    );
    let cut = 0;
    for (let i = 0; i < 30; i++) {
      cut += await cutAllSessions();
      await sleep(300 + Math.floor(Math.random() * 300));
    }
    expect(cut).toBeGreaterThan(30);
    const exited = ["web", "workers", "agent-1"].filter((n) => !s.proc(n).alive());
    expect(exited, `exited on a cut session:\n${s.logs(exited, 3000)}`).toEqual([]);
    for (const r of runs) {
      const run = await s.waitForRun(r.json.run_id, t.token, (x) => x.status === "completed", 120_000);
      expect(run.outcome).toBe("success");
    }
  }, 300_000);
});
