import { execFileSync } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { addSchedule, DEFAULT_ENGINE_CONFIG } from "@kiln/engine";
import { LOCAL_SOURCE, seedTenant, useTestDb } from "@kiln/engine/testing";
import { silentLogger } from "@kiln/logger";
import type { Job, PgBoss } from "pg-boss";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { WorkerDeps } from "./job-definition.ts";
import { runSchedulesJob } from "./run-schedules.job.ts";

// Run-it-twice (conventions rule 9): a due slot is admitted by the first run of the job; the
// second, and a concurrent third, admit nothing more.
const t = useTestDb();
let root: string;
let cloneUrl: string;
let headSha: string;

// A plain local repository (file://, which the tests' source policy admits) with one commit on main.
beforeAll(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), "kiln-sched-"));
  const git = (...args: string[]) =>
    execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@localhost", "-C", root, ...args], {
      encoding: "utf8",
    }).trim();
  git("init", "-q", "-b", "main");
  await writeFile(path.join(root, "workflow.yaml"), "version: 1\njobs:\n  - name: a\n    steps: [true]\n");
  git("add", ".");
  git("commit", "-qm", "init");
  headSha = git("rev-parse", "HEAD");
  cloneUrl = `file://${root}`;
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

describe("run-schedules job", () => {
  it("admits a due slot once however often it runs", async () => {
    const tenant = await seedTenant(t.db());
    await t.db().$executeRaw`UPDATE repo SET clone_url = ${cloneUrl} WHERE id = ${tenant.repoId}::uuid`;
    const s = await addSchedule(t.db(), {
      caller: { orgId: tenant.orgId, role: "member", actor: "web:alice" },
      repoId: tenant.repoId,
      cron: "* * * * *",
      timezone: "UTC",
    });
    // Created two minutes ago: the last minute's slot is due now.
    await t.db().$executeRaw`UPDATE schedule SET created_at = now() - interval '2 minutes' WHERE id = ${s.id}::uuid`;
    const deps = {
      db: t.db(),
      boss: null as unknown as PgBoss,
      cfg: DEFAULT_ENGINE_CONFIG,
      gitCacheDir: root,
      source: LOCAL_SOURCE,
      log: silentLogger,
      registries: {},
      poolImages: {},
      // Schedules never reach the forge; no credential configured.
      forge: { apiUrl: "http://127.0.0.1:1", publicUrl: null, secretsKey: null, app: null, requestTimeoutMs: 1000 },
      // This job needs none of the shared runtimes.
      runtime: {
        shred: null,
        attestor: () => Promise.reject(new Error("no attestor in this test")),
        tlog: () => {
          throw new Error("no tlog in this test");
        },
      },
    } satisfies WorkerDeps;
    const job = {} as Job<unknown>;
    await runSchedulesJob.handle(deps, {}, job);
    await Promise.all([runSchedulesJob.handle(deps, {}, job), runSchedulesJob.handle(deps, {}, job)]);
    const runs = await t.db().$queryRaw<{ n: number; sha: string }[]>`
      SELECT count(*)::int AS n, min(commit_sha) AS sha FROM workflow_run WHERE repo_id = ${tenant.repoId}::uuid AND trigger = 'schedule'`;
    expect(runs).toEqual([{ n: 1, sha: headSha }]);
  });
});
