import { readFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { seedTenant, useTestDb } from "../support.ts";

// Migration 0026_forge_identity on rows written before it: repo names that clash up to case stop
// the migration with a message naming them (nothing changes), and existing pull-request runs (with
// their retries) move to refs/pull/<n>/head with the head branch kept apart. The parts are run
// from the migration file itself against a migrated database whose index is dropped first.
const t = useTestDb();
const here = path.dirname(fileURLToPath(import.meta.url));
const sqlFile = path.join(here, "../../../../prisma/migrations/0026_forge_identity/migration.sql");

async function part(start: string, end: string): Promise<string> {
  const text = await readFile(sqlFile, "utf8");
  const from = text.indexOf(start);
  const to = text.indexOf(end, from);
  if (from < 0 || to < 0) throw new Error(`migration part ${start}..${end} not found`);
  return text.slice(from, to + end.length);
}

describe("migration 0026_forge_identity", () => {
  it("stops on names differing only by case, naming both, and leaves every row as it was", async () => {
    const a = await seedTenant(t.db());
    const b = await seedTenant(t.db());
    const check = await part("DO $$", "END $$;");
    // Clean data: the check passes.
    await t.db().$executeRawUnsafe(check);
    await t.db().$executeRawUnsafe(`DROP INDEX "repo_full_name_lower_key"`);
    try {
      const variant = a.repoName.toUpperCase();
      await t.db().$executeRaw`INSERT INTO repo (org_id, full_name, clone_url, webhook_secret, workflow_path)
        VALUES (${b.orgId}::uuid, ${variant}, 'https://x/y.git', 'whsec_12345678', '.kiln/workflow.yaml')`;
      const err = await t
        .db()
        .$executeRawUnsafe(check)
        .then(
          () => null,
          (e: unknown) => String(e),
        );
      expect(err).toContain("repo names differing only by case");
      expect(err).toContain(a.repoName);
      expect(err).toContain(variant);
      const rows = await t.db().$queryRaw<{ n: number }[]>`
        SELECT count(*)::int AS n FROM repo WHERE lower(full_name) = lower(${a.repoName})`;
      expect(rows[0]?.n).toBe(2);
      await t.db().$executeRaw`DELETE FROM repo WHERE full_name = ${variant}`;
    } finally {
      await t.db().$executeRawUnsafe(`CREATE UNIQUE INDEX "repo_full_name_lower_key" ON "repo" (lower("full_name"))`);
    }
  });

  it("moves a pull request's run and its retry to refs/pull/<n>/head, keeping the head branch", async () => {
    const tn = await seedTenant(t.db());
    const ins = (trigger: string, ref: string, parent: string | null) => t.db().$queryRaw<{ id: string }[]>`
      INSERT INTO workflow_run (org_id, repo_id, status, trust_class, trigger, ref, commit_sha, workflow_path, inputs, parent_run_id)
      VALUES (${tn.orgId}::uuid, ${tn.repoId}::uuid, 'pending', 'untrusted', ${trigger}, ${ref}, ${"b".repeat(40)},
              '.kiln/workflow.yaml', '{}'::jsonb, ${parent}::uuid) RETURNING id`;
    const pr = (await ins("pull_request", "main", null))[0]?.id ?? "";
    await t.db()
      .$executeRaw`INSERT INTO run_pull_request (run_id, repo_id, number) VALUES (${pr}::uuid, ${tn.repoId}::uuid, 7)`;
    const retry = (await ins("retry", "main", pr))[0]?.id ?? "";
    const push = (await ins("push", "refs/heads/main", null))[0]?.id ?? "";
    await t
      .db()
      .$executeRawUnsafe(
        await part(
          `UPDATE "workflow_run" r SET "head_ref"`,
          `WHERE p."run_id" = r."id" AND r."trigger" = 'pull_request';`,
        ),
      );
    await t.db().$executeRawUnsafe(await part("WITH RECURSIVE pr_family", `AND w."trigger" <> 'pull_request';`));
    const rows = await t.db().$queryRaw<{ id: string; ref: string; head_ref: string | null }[]>`
      SELECT id, ref, head_ref FROM workflow_run WHERE id IN (${pr}::uuid, ${retry}::uuid, ${push}::uuid)`;
    const by = new Map(rows.map((r) => [r.id, r]));
    expect(by.get(pr)).toMatchObject({ ref: "refs/pull/7/head", head_ref: "main" });
    expect(by.get(retry)).toMatchObject({ ref: "refs/pull/7/head", head_ref: "main" });
    expect(by.get(push)).toMatchObject({ ref: "refs/heads/main", head_ref: null });
  });
});
