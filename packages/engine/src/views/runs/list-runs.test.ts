import { beforeAll, describe, expect, it } from "vitest";
import { seedOrg, seedRuns, useViewDb, type Org } from "../testing/view-fixtures.ts";
import { listRuns } from "./list-runs.ts";
import { runFilters, type RunFilters } from "@kiln/domain";

const db = useViewDb();
let org: Org;

beforeAll(async () => {
  org = await seedOrg(db(), "paging");
  await seedRuns(db(), org, 500, 1);
  // 25 runs sharing one created_at: the id tie-break must neither skip nor repeat them.
  await db().$executeRaw`
    INSERT INTO workflow_run (org_id, repo_id, status, trust_class, trigger, commit_sha, workflow_path, inputs, created_at)
    SELECT ${org.orgId}::uuid, ${org.repoId}::uuid, 'pending', 'trusted', 'manual', repeat('b', 40), 'w.yaml', '{}'::jsonb,
           now() - interval '100 seconds'
    FROM generate_series(1, 25)`;
});

async function walk(filters: RunFilters, limit: number): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | null = null;
  for (let i = 0; i < 1000; i++) {
    const page = await listRuns(db(), org.scope, { filters, cursor, limit });
    ids.push(...page.runs.map((r) => r.id));
    if (!page.next_cursor) return ids;
    cursor = page.next_cursor;
  }
  throw new Error("pagination did not end");
}

describe("listRuns keyset pagination", () => {
  it("visits every run exactly once, newest first, across created_at ties", async () => {
    const ids = await walk({}, 10);
    expect(ids).toHaveLength(525);
    expect(new Set(ids).size).toBe(525);
    const all = await db().$queryRaw<{ id: string }[]>`
      SELECT id FROM workflow_run WHERE org_id = ${org.orgId}::uuid ORDER BY created_at DESC, id DESC`;
    expect(ids).toEqual(all.map((r) => r.id));
  });

  it("applies each filter in the query and pages within the filtered set", async () => {
    const failures = await walk({ outcome: "platform_failure" }, 3);
    expect(failures).toHaveLength(10);
    const feature = await walk({ ref: "refs/heads/feature", trigger: "push" }, 20);
    const expected = await db().$queryRaw<{ n: number }[]>`
      SELECT count(*)::int AS n FROM workflow_run WHERE org_id = ${org.orgId}::uuid AND ref = 'refs/heads/feature' AND trigger = 'push'`;
    expect(feature).toHaveLength(expected[0]!.n);
    expect(await walk({ status: "pending" }, 7)).toHaveLength(25);
    const page = await listRuns(db(), org.scope, { filters: { repoId: org.repoId, status: "completed" }, limit: 5 });
    expect(page.runs.map((r) => [r.repo_name, r.status, r.jobs_total, r.jobs_done])).toEqual(
      Array(5).fill(["paging/app", "completed", 1, 1]),
    );
    expect(page.runs.every((r) => (r.outcome === "success") === (r.outcome_class === "ok"))).toBe(true);
  });

  it("filters by every trigger that creates runs, schedules and deploys included (issue 33)", async () => {
    const other = await seedOrg(db(), "triggers");
    for (const [trigger, n] of [
      ["schedule", 3],
      ["deploy", 2],
      ["push", 1],
    ] as const)
      await db().$executeRaw`
        INSERT INTO workflow_run (org_id, repo_id, status, trust_class, trigger, commit_sha, workflow_path, inputs)
        SELECT ${other.orgId}::uuid, ${other.repoId}::uuid, 'pending', 'trusted', ${trigger}, repeat('c', 40), 'w.yaml', '{}'::jsonb
        FROM generate_series(1, ${n}::int)`;
    for (const [trigger, n] of [
      ["schedule", 3],
      ["deploy", 2],
      ["push", 1],
      ["manual", 0],
    ] as const) {
      const filters = runFilters.parse({ trigger });
      const page = await listRuns(db(), other.scope, { filters, limit: 50 });
      expect(page.runs.map((r) => r.trigger)).toEqual(Array(n).fill(trigger));
    }
  });

  it("rejects a forged cursor instead of guessing", async () => {
    await expect(listRuns(db(), org.scope, { filters: {}, cursor: "bm90LWEtY3Vyc29y", limit: 10 })).rejects.toThrow(
      "cursor is not valid",
    );
  });
});
