import { execFile } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { startGitServer, type TestGitRepo, type TestGitServer } from "@kiln/testkit";
import { withTx } from "@kiln/db";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { listAuditEvents } from "../src/audit/index.ts";
import { freezeRun } from "../src/runs/freeze-run.ts";
import { addSchedule, listSchedules, recordWorkflowSchedules, removeSchedule } from "../src/schedules/index.ts";
import { runScheduleTick } from "../src/schedules/run-schedules.ts";
import { LOCAL_SOURCE, seedTenant, useTestDb, type Tenant } from "./support.ts";

// Schedules (issue 20, ADR 0031) against real PostgreSQL and a real git server: one run per slot
// however many passes race, at the default branch's head, on the scheduled tier, trusted.

const t = useTestDb();
let git: TestGitServer;
let gitRoot: string;
let cacheDir: string;

beforeAll(async () => {
  gitRoot = await mkdtemp(path.join(os.tmpdir(), "kiln-git-"));
  cacheDir = await mkdtemp(path.join(os.tmpdir(), "kiln-gitcache-"));
  git = await startGitServer({ rootDir: gitRoot });
});
afterAll(async () => {
  await git.stop();
  await rm(gitRoot, { recursive: true, force: true });
  await rm(cacheDir, { recursive: true, force: true });
});

const WORKFLOW = "version: 1\njobs:\n  - name: nightly\n    steps: [echo nightly]\n";

async function tenantWithRepo(yaml = WORKFLOW): Promise<{ tenant: Tenant; repo: TestGitRepo }> {
  const tenant = await seedTenant(t.db());
  const repo = await git.createRepo(`${tenant.slug}.git`, { ".kiln/workflow.yaml": yaml });
  await t.db().$executeRaw`UPDATE repo SET clone_url = ${repo.cloneUrl} WHERE id = ${tenant.repoId}::uuid`;
  return { tenant, repo };
}

const member = (tenant: Tenant) => ({ orgId: tenant.orgId, role: "member" as const, actor: "web:alice" });

async function scheduledRuns(tenant: Tenant) {
  return t.db().$queryRaw<{ id: string; commit_sha: string; trust_class: string; actor: string; ref: string }[]>`
    SELECT id, commit_sha, trust_class, actor, ref FROM workflow_run
    WHERE repo_id = ${tenant.repoId}::uuid AND trigger = 'schedule' ORDER BY created_at`;
}

/** Backdates a schedule's creation so its first slot is in the past. */
async function createdAt(scheduleId: string, iso: string) {
  await t.db().$executeRaw`UPDATE schedule SET created_at = ${new Date(iso)} WHERE id = ${scheduleId}::uuid`;
}

describe("scheduler pass", () => {
  // A pass covers every schedule in the database: each case starts with only its own.
  beforeEach(async () => {
    await t.db().$executeRaw`DELETE FROM schedule`;
  });

  it("admits exactly one run per slot when many passes race, at the branch head, trusted", async () => {
    const { tenant, repo } = await tenantWithRepo();
    const s = await addSchedule(t.db(), {
      caller: member(tenant),
      repoId: tenant.repoId,
      cron: "*/5 * * * *",
      timezone: "UTC",
    });
    await createdAt(s.id, "2026-06-01T10:01:00Z");
    const now = new Date("2026-06-01T10:06:30Z");
    const reports = await Promise.all(
      Array.from({ length: 6 }, () => runScheduleTick(t.db(), { source: LOCAL_SOURCE, now })),
    );
    expect(reports.reduce((n, r) => n + r.admitted, 0)).toBe(1);
    // Run it again (a restarted worker, the cron backstop): nothing more for this slot.
    expect(await runScheduleTick(t.db(), { source: LOCAL_SOURCE, now })).toMatchObject({ admitted: 0 });
    const runs = await scheduledRuns(tenant);
    expect(runs).toEqual([
      {
        id: expect.any(String),
        commit_sha: repo.headSha,
        trust_class: "trusted",
        actor: `schedule:${s.id}`,
        ref: "refs/heads/main",
      },
    ]);
    const slots = await t.db().$queryRaw<{ slot_at: Date; run_id: string }[]>`
      SELECT slot_at, run_id FROM schedule_slot WHERE schedule_id = ${s.id}::uuid`;
    expect(slots).toEqual([{ slot_at: new Date("2026-06-01T10:05:00Z"), run_id: runs[0]?.id }]);
  });

  it("runs the head as it is at the slot, and a missed stretch once on recovery", async () => {
    const { tenant, repo } = await tenantWithRepo();
    const s = await addSchedule(t.db(), {
      caller: member(tenant),
      repoId: tenant.repoId,
      cron: "0 3 * * *",
      timezone: "Europe/Berlin",
    });
    await createdAt(s.id, "2026-06-01T00:00:00Z");
    await runScheduleTick(t.db(), { source: LOCAL_SOURCE, now: new Date("2026-06-01T01:00:30Z") });
    const later = await repo.commit({ "README.md": "newer\n" });
    // Down for three days: three 03:00 slots passed, one run, at the newest head.
    const r = await runScheduleTick(t.db(), { source: LOCAL_SOURCE, now: new Date("2026-06-04T09:00:00Z") });
    expect(r).toMatchObject({ due: 1, admitted: 1 });
    expect((await scheduledRuns(tenant)).map((x) => x.commit_sha)).toEqual([expect.any(String), later]);
    const [view] = await listSchedules(t.db(), { orgId: tenant.orgId, repoId: tenant.repoId });
    expect(view?.last_slot_at).toBe("2026-06-04T01:00:00.000Z");
    // Shown from the database's clock: the next 03:00 in Berlin after now.
    const next = new Date(view?.next_runs[0] ?? 0);
    expect(next.getTime()).toBeGreaterThan(Date.now());
    expect(next.getTime() - Date.now()).toBeLessThanOrEqual(25 * 3_600_000);
    expect(new Intl.DateTimeFormat("en-GB", { timeZone: "Europe/Berlin", timeStyle: "short" }).format(next)).toBe(
      "03:00",
    );
  });

  it("freezes a scheduled run with its jobs on the scheduled tier", async () => {
    const { tenant } = await tenantWithRepo();
    const s = await addSchedule(t.db(), {
      caller: member(tenant),
      repoId: tenant.repoId,
      cron: "* * * * *",
      timezone: "UTC",
    });
    await createdAt(s.id, "2026-06-01T00:00:00Z");
    await runScheduleTick(t.db(), { source: LOCAL_SOURCE, now: new Date("2026-06-01T00:01:10Z") });
    const [run] = await scheduledRuns(tenant);
    expect(
      await freezeRun(t.db(), { runId: run?.id ?? "", gitCacheDir: cacheDir, source: LOCAL_SOURCE, finalTry: false }),
    ).toBe("frozen");
    const jobs = await t.db().$queryRaw<{ tier: string }[]>`SELECT tier FROM job_run WHERE run_id = ${run?.id}::uuid`;
    expect(jobs).toEqual([{ tier: "scheduled" }]);
  });

  it("waits when the branch head cannot be read, and admits the slot when it can", async () => {
    const { tenant } = await tenantWithRepo();
    const s = await addSchedule(t.db(), {
      caller: member(tenant),
      repoId: tenant.repoId,
      cron: "* * * * *",
      timezone: "UTC",
    });
    await createdAt(s.id, "2026-06-01T00:00:00Z");
    const url = (
      await t.db().$queryRaw<{ clone_url: string }[]>`SELECT clone_url FROM repo WHERE id = ${tenant.repoId}::uuid`
    )[0]?.clone_url;
    await t.db()
      .$executeRaw`UPDATE repo SET clone_url = 'http://127.0.0.1:9/gone.git' WHERE id = ${tenant.repoId}::uuid`;
    const now = new Date("2026-06-01T00:02:10Z");
    expect(await runScheduleTick(t.db(), { source: LOCAL_SOURCE, now })).toMatchObject({
      due: 1,
      unavailable: 1,
      admitted: 0,
    });
    await t.db().$executeRaw`UPDATE repo SET clone_url = ${url} WHERE id = ${tenant.repoId}::uuid`;
    expect(await runScheduleTick(t.db(), { source: LOCAL_SOURCE, now })).toMatchObject({ admitted: 1 });
  });
});

describe("schedule store", () => {
  it("is scoped to the caller's org, refuses bad specs and auditors, and audits changes", async () => {
    const { tenant } = await tenantWithRepo();
    const other = await seedTenant(t.db());
    await expect(
      addSchedule(t.db(), { caller: member(other), repoId: tenant.repoId, cron: "0 3 * * *", timezone: "UTC" }),
    ).rejects.toMatchObject({ code: "REPO.NOT_FOUND" });
    await expect(
      addSchedule(t.db(), { caller: member(tenant), repoId: tenant.repoId, cron: "0 3 * *", timezone: "UTC" }),
    ).rejects.toMatchObject({ code: "SCHEDULE.INVALID" });
    await expect(
      addSchedule(t.db(), {
        caller: { ...member(tenant), role: "auditor" },
        repoId: tenant.repoId,
        cron: "0 3 * * *",
        timezone: "UTC",
      }),
    ).rejects.toMatchObject({ code: "AUTH.FORBIDDEN" });
    const s = await addSchedule(t.db(), {
      caller: member(tenant),
      repoId: tenant.repoId,
      cron: "0 3 * * *",
      timezone: "UTC",
    });
    await expect(
      addSchedule(t.db(), { caller: member(tenant), repoId: tenant.repoId, cron: "0  3 * * *", timezone: "UTC" }),
    ).rejects.toMatchObject({ code: "SCHEDULE.EXISTS" });
    expect(await listSchedules(t.db(), { orgId: other.orgId })).toEqual([]);
    await expect(removeSchedule(t.db(), { caller: member(other), scheduleId: s.id })).rejects.toMatchObject({
      code: "SCHEDULE.NOT_FOUND",
    });
    await removeSchedule(t.db(), { caller: member(tenant), scheduleId: s.id });
    const audit = await listAuditEvents(t.db(), { orgSlug: tenant.slug });
    expect(audit.map((e) => e.kind)).toEqual(expect.arrayContaining(["schedule.added", "schedule.removed"]));
  });

  it("records the workflow's schedules from a default-branch freeze, replaced by a later one, never by an older one", async () => {
    const { tenant } = await tenantWithRepo();
    const record = (at: string, declared: { cron: string; timezone: string }[]) =>
      withTx(t.db(), "test", (tx) =>
        recordWorkflowSchedules(
          tx,
          { orgId: tenant.orgId, repoId: tenant.repoId, admittedAt: new Date(at), actor: "push" },
          declared,
        ),
      );
    expect(await record("2026-06-01T10:00:00Z", [{ cron: "0 3 * * *", timezone: "Europe/Berlin" }])).toBe(true);
    const first = await listSchedules(t.db(), { orgId: tenant.orgId });
    expect(await record("2026-06-01T09:00:00Z", [])).toBe(false);
    expect(
      await record("2026-06-01T11:00:00Z", [
        { cron: "0 3 * * *", timezone: "Europe/Berlin" },
        { cron: "0 12 * * 1", timezone: "UTC" },
      ]),
    ).toBe(true);
    const second = await listSchedules(t.db(), { orgId: tenant.orgId });
    expect(second.map((s) => [s.cron, s.origin])).toEqual([
      ["0 3 * * *", "workflow"],
      ["0 12 * * 1", "workflow"],
    ]);
    expect(second[0]?.id).toBe(first[0]?.id);
    await expect(
      removeSchedule(t.db(), { caller: member(tenant), scheduleId: first[0]?.id ?? "" }),
    ).rejects.toMatchObject({
      code: "SCHEDULE.FROM_WORKFLOW",
    });
    expect(await record("2026-06-01T12:00:00Z", [])).toBe(true);
    expect(await listSchedules(t.db(), { orgId: tenant.orgId })).toEqual([]);
  });
});

// Four CLI processes (tsx start-up each): generous on a loaded machine.
describe("kiln schedule (the CLI)", { timeout: 180_000 }, () => {
  const ROOT = path.resolve(import.meta.dirname, "../../..");
  function kiln(args: string[]): Promise<{ code: number; stdout: string }> {
    return new Promise((resolve) =>
      execFile(
        process.execPath,
        ["--import", "tsx", "scripts/kiln.ts", ...args, "--json"],
        { cwd: ROOT, env: { ...process.env, DATABASE_URL: t.url() } },
        (err, stdout) => resolve({ code: err ? Number(err.code ?? 1) : 0, stdout }),
      ),
    );
  }

  it("adds, lists and removes a repo's schedule, and names a bad cron", async () => {
    const { tenant } = await tenantWithRepo();
    const added = await kiln(["schedule", "add", tenant.repoName, "0 3 * * *", "--timezone", "Europe/Berlin"]);
    expect(added.code).toBe(0);
    const s = JSON.parse(added.stdout) as { id: string; cron: string; timezone: string; next_runs: string[] };
    expect(s).toMatchObject({ cron: "0 3 * * *", timezone: "Europe/Berlin" });
    expect(s.next_runs).toHaveLength(3);
    const listed = JSON.parse((await kiln(["schedule", "list", tenant.repoName])).stdout) as { id: string }[];
    expect(listed.map((x) => x.id)).toEqual([s.id]);
    const bad = await kiln(["schedule", "add", tenant.repoName, "0 3 * *"]);
    expect(bad.code).toBe(1);
    expect(JSON.parse(bad.stdout).error.code).toBe("SCHEDULE.INVALID");
    expect((await kiln(["schedule", "remove", tenant.repoName, s.id])).code).toBe(0);
    expect(await listSchedules(t.db(), { orgId: tenant.orgId })).toEqual([]);
  });
});
