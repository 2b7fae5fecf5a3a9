import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FaultStack, type Tenant } from "./support/harness.ts";

// Found by the chaos soak: runs of one repo are frozen concurrently (run-freeze concurrency 4) and
// every freeze shallow-fetches into the same git mirror (<KILN_DATA_DIR>/git-cache/<repo>.git). Git
// refuses a second concurrent shallow fetch ("shallow.lock: File exists", "shallow file has changed
// since we read it"); fetchWorkflowFile reports that as `unreachable`, so the freeze is retried with
// backoff and, if it keeps colliding, the run ends platform_failure `source.unreachable` although
// the forge never was. Several runs of one new commit at once are ordinary (a push and a
// pull_request event for the same sha, manual triggers, a retry burst).
let s: FaultStack;
let t: Tenant;

beforeAll(async () => {
  s = await FaultStack.create();
  t = await s.seedTenant("burst", { ".kiln/workflow.yaml": 'version: 1\njobs:\n  - name: a\n    steps: ["true"]\n' });
  s.startWorkers();
  await s.startWeb();
  s.startAgent("agent-1", t.agentToken, { env: { KILN_AGENT_SLOTS: "4" } });
}, 180_000);
afterAll(async () => {
  await s?.stop();
});

describe("a burst of runs for one new commit", () => {
  it("6 runs of a commit the mirror has not seen are frozen on the first try, none reported unreachable", async () => {
    const sha = await t.git.commit({ "README.md": "new commit\n" });
    const runs = await Promise.all(Array.from({ length: 6 }, (_, i) => s.trigger(t, `burst-${i}`, { sha })));
    const ids = runs.map((r) => r.json.run_id as string);
    for (const id of ids)
      expect((await s.waitForRun(id, t.token, (x) => x.status === "completed", 120_000)).cause).not.toBe(
        "source.unreachable",
      );
    const freezes = await s.db.$queryRawUnsafe<{ run_id: string; retry_count: number; output: any }[]>(
      `SELECT data->>'runId' AS run_id, retry_count, output FROM pgboss.job WHERE name = 'run-freeze' AND data->>'runId' = ANY($1::text[])`,
      ids,
    );
    const retried = freezes
      .filter((f) => f.retry_count > 0)
      .map((f) => `${f.run_id}: ${String(f.output?.message ?? "").slice(0, 120)}`);
    expect(retried, "freezes that failed and were retried").toEqual([]);
  }, 180_000);
});
