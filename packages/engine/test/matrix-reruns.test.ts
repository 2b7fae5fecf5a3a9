import { randomUUID } from "node:crypto";
import { withTx } from "@kiln/db";
import { describe, expect, it } from "vitest";
import { claimJob, type JobTicket } from "../src/dispatch/claim-job.ts";
import { heartbeat } from "../src/attempts/heartbeat.ts";
import { completeAttempt } from "../src/attempts/complete-attempt.ts";
import { grantDownload } from "../src/artifacts/grant-download.ts";
import { collectArtifactGarbage } from "../src/artifacts/collect-garbage.ts";
import { listJobArtifacts } from "../src/artifacts/job-artifacts.ts";
import { createJobs } from "../src/runs/freeze-run.ts";
import { getRun } from "../src/runs/get-run.ts";
import { listFlakyJobs } from "../src/runs/flaky-jobs.ts";
import { rerunFailedJobs } from "../src/runs/rerun-failed.ts";
import { retryRun } from "../src/runs/retry-run.ts";
import { claimsOf, publish, sha256, useS3 } from "./artifacts/support.ts";
import { def, newSession, runStatus, seedFrozenRun, seedTenant, TEST_CFG, useTestDb, type Tenant } from "./support.ts";

const t = useTestDb();
const s3 = useS3();

async function claimAll(sessionId: string): Promise<JobTicket[]> {
  const got: JobTicket[] = [];
  for (;;) {
    const r = await claimJob(t.db(), TEST_CFG, { sessionId, claimRequestId: randomUUID() });
    if (r.kind !== "claimed") return got;
    got.push(r.ticket);
  }
}

function finish(ticket: JobTicket, outcome: "success" | "user_failure" | "cancelled" = "success") {
  return completeAttempt(t.db(), TEST_CFG, {
    attemptId: ticket.attemptId,
    jobId: ticket.jobId,
    epoch: ticket.epoch,
    outcome,
    sandboxDestroyed: true,
  });
}

function named(list: readonly JobTicket[], name: string): JobTicket {
  const found = list.find((x) => x.job.name === name);
  if (!found) throw new Error(`no claimed job ${name}`);
  return found;
}

async function jobsOf(runId: string) {
  return t.db().$queryRaw<
    { name: string; status: string; outcome: string | null; cause: string | null; attempts: bigint }[]
  >`SELECT name, status, outcome, cause, (SELECT count(*) FROM attempt a WHERE a.job_id = j.id) AS attempts
    FROM job_run j WHERE run_id = ${runId}::uuid ORDER BY job_index`;
}

const member = (tenant: Tenant) => ({
  tokenId: tenant.tokenId,
  orgId: tenant.orgId,
  role: "member" as const,
  name: "alice",
});

const MATRIX = (strategy: string) => `version: 1
jobs:
  - name: test
    steps: [./test.sh]
    strategy:
      matrix:
        jdk: [17, 21]
        os: [linux, mac]
${strategy}
  - name: report
    needs: [test]
    steps: [./report.sh]
`;

describe("matrix runs", () => {
  it("runs every expansion with its values in env, and the job that needs them after all of them", async () => {
    const tenant = await seedTenant(t.db());
    const session = await newSession(t.db(), tenant);
    const runId = await seedFrozenRun(t.db(), tenant, def(MATRIX("")));
    const first = await claimAll(session);
    expect(first.map((x) => x.job.name).sort()).toEqual([
      "test (jdk: 17, os: linux)",
      "test (jdk: 17, os: mac)",
      "test (jdk: 21, os: linux)",
      "test (jdk: 21, os: mac)",
    ]);
    for (const x of first) {
      const [, jdk, os] = /jdk: (\d+), os: (\w+)/.exec(x.job.name) ?? [];
      expect(x.job.env).toMatchObject({ KILN_MATRIX_JDK: jdk, KILN_MATRIX_OS: os });
      expect(x.job.steps).toEqual(["./test.sh"]);
    }
    for (const x of first.slice(0, 3)) await finish(x);
    expect(await claimAll(session)).toEqual([]);
    await finish(first[3] as JobTicket);
    const after = await claimAll(session);
    expect(after.map((x) => x.job.name)).toEqual(["report"]);
    await finish(after[0] as JobTicket);
    expect(await runStatus(t.db(), runId)).toMatchObject({ status: "completed", outcome: "success" });
    const view = await getRun(t.db(), { orgId: tenant.orgId, runId });
    expect(view.jobs[0]?.matrix).toEqual({ jdk: "17", os: "linux" });
    expect(view.jobs[4]?.needs).toHaveLength(4);
  });

  it("keeps at most max_parallel expansions READY or running", async () => {
    const tenant = await seedTenant(t.db());
    const session = await newSession(t.db(), tenant);
    const runId = await seedFrozenRun(t.db(), tenant, def(MATRIX("      max_parallel: 1")));
    const ready = () =>
      t.db().$queryRaw<{ n: bigint }[]>`
        SELECT count(*) AS n FROM job_run WHERE run_id = ${runId}::uuid AND status IN ('ready', 'running')`;
    const seen: string[] = [];
    for (let i = 0; i < 4; i++) {
      expect((await ready())[0]?.n).toBe(1n);
      const got = await claimAll(session);
      expect(got).toHaveLength(1);
      seen.push(got[0]?.job.name ?? "");
      await finish(got[0] as JobTicket);
    }
    expect(seen).toEqual([
      "test (jdk: 17, os: linux)",
      "test (jdk: 17, os: mac)",
      "test (jdk: 21, os: linux)",
      "test (jdk: 21, os: mac)",
    ]);
    expect((await claimAll(session)).map((x) => x.job.name)).toEqual(["report"]);
  });

  it("fail_fast cancels the unfinished siblings through the job cancel, with events, and the run names the real failure", async () => {
    const tenant = await seedTenant(t.db());
    const session = await newSession(t.db(), tenant);
    const runId = await seedFrozenRun(t.db(), tenant, def(MATRIX("      max_parallel: 3")));
    const running = await claimAll(session);
    expect(running).toHaveLength(3);
    const failing = named(running, "test (jdk: 17, os: linux)");
    const other = named(running, "test (jdk: 17, os: mac)");
    const third = named(running, "test (jdk: 21, os: linux)");
    await finish(third);
    await finish(failing, "user_failure");
    // The still-running sibling is asked to stop; the one never started is cancelled at once.
    const hb = await heartbeat(t.db(), TEST_CFG, {
      attemptId: other.attemptId,
      jobId: other.jobId,
      epoch: other.epoch,
    });
    expect(hb.cancelRequested).toBe(true);
    await finish(other, "cancelled");
    const jobs = await jobsOf(runId);
    expect(jobs.map((j) => [j.name, j.outcome, j.cause])).toEqual([
      ["test (jdk: 17, os: linux)", "user_failure", "step.failed"],
      ["test (jdk: 17, os: mac)", "cancelled", "matrix.fail_fast"],
      ["test (jdk: 21, os: linux)", "success", null],
      ["test (jdk: 21, os: mac)", "cancelled", "matrix.fail_fast"],
      ["report", "cancelled", "needs.not_satisfied"],
    ]);
    expect(await runStatus(t.db(), runId)).toMatchObject({ outcome: "user_failure", cause: "step.failed" });
    const events = await t.db().$queryRaw<{ entity: string; reason: string; n: bigint }[]>`
      SELECT entity, reason, count(*) AS n FROM transition_event
      WHERE run_id = ${runId}::uuid AND (reason = 'cancelled' OR reason = 'stop_requested') GROUP BY entity, reason ORDER BY entity, reason`;
    // The stop request, the stopped attempt's end, and the never-started sibling's cancel.
    expect(events).toEqual([
      { entity: "attempt", reason: "cancelled", n: 1n },
      { entity: "attempt", reason: "stop_requested", n: 1n },
      { entity: "job", reason: "cancelled", n: 1n },
    ]);
  });

  it("without fail_fast a failed expansion leaves its siblings running", async () => {
    const tenant = await seedTenant(t.db());
    const session = await newSession(t.db(), tenant);
    const runId = await seedFrozenRun(t.db(), tenant, def(MATRIX("      fail_fast: false")));
    const running = await claimAll(session);
    await finish(named(running, "test (jdk: 17, os: linux)"), "user_failure");
    for (const x of running.filter((r) => r.job.name !== "test (jdk: 17, os: linux)")) await finish(x);
    const jobs = await jobsOf(runId);
    expect(jobs.slice(0, 4).map((j) => j.outcome)).toEqual(["user_failure", "success", "success", "success"]);
  });
});

const CHAIN = `version: 1
jobs:
  - name: compile
    steps: [make]
    artifacts:
      publish:
        - {name: app, path: target/app.jar}
  - name: test
    steps: [make test]
    artifacts:
      restore:
        - {from_job: compile, name: app, path: inputs/app.jar}
  - name: deploy
    steps: [make deploy]
  - name: lint
    needs: []
    steps: [make lint]
`;

describe("re-run failed jobs", () => {
  it("pins the successful prefix with its artifacts and reruns the failed job and its descendants", async () => {
    const tenant = await seedTenant(t.db());
    // Untrusted work runs on microVM hosts only (ADR 0022); the re-run must stay untrusted.
    const session = await newSession(t.db(), tenant, 100, "host", "microvm");
    const parentId = await seedFrozenRun(t.db(), tenant, def(CHAIN), "untrusted");
    const roots = await claimAll(session);
    const compile = roots.find((x) => x.job.name === "compile") as JobTicket;
    const data = Buffer.from("the jar");
    const generation = await publish(t.db(), s3.store(), compile, "app", data);
    for (const x of roots) await finish(x);
    const [test] = await claimAll(session);
    await finish(test as JobTicket, "user_failure");
    expect(await runStatus(t.db(), parentId)).toMatchObject({ outcome: "user_failure" });

    const r = await rerunFailedJobs(t.db(), { caller: member(tenant), runId: parentId });
    expect(r.pinned.map((p) => p.name)).toEqual(["compile", "lint"]);
    expect(r.rerun.map((p) => p.name)).toEqual(["test", "deploy"]);
    const view = await getRun(t.db(), { orgId: tenant.orgId, runId: r.runId });
    expect(view).toMatchObject({ parent_run_id: parentId, trust_class: "untrusted", trigger: "rerun_failed" });
    const parent = await getRun(t.db(), { orgId: tenant.orgId, runId: parentId });
    expect(view.workflow_hash).toBe(parent.workflow_hash);
    const compileParent = parent.jobs.find((j) => j.name === "compile");
    expect(view.jobs.map((j) => [j.name, j.status, j.outcome, j.attempts.length, j.reused_from])).toEqual([
      ["compile", "completed", "success", 0, { run_id: parentId, job_id: compileParent?.id }],
      ["test", "ready", null, 0, null],
      ["deploy", "pending", null, 0, null],
      ["lint", "completed", "success", 0, { run_id: parentId, job_id: parent.jobs[3]?.id }],
    ]);
    // The pinned job shows the producer's artifact, and the rerun consumer downloads that very generation.
    const pinnedCompile = view.jobs[0]?.id ?? "";
    expect(await listJobArtifacts(t.db(), { orgId: tenant.orgId, jobId: pinnedCompile })).toEqual([
      {
        id: expect.stringMatching(/^[0-9a-f-]{36}$/),
        name: "app",
        size: data.length,
        sha256: sha256(data),
        attempt_epoch: 1,
        // The pinned job's artifact is the producer's, with the producer's attestation state.
        attestation_state: "pending",
        quarantine_reason: null,
        // Written at seal time (issue 21): the run is on the default branch.
        retention_class: "default_branch",
        expires_at: expect.any(String),
        expired_at: null,
      },
    ]);
    const [again] = await claimAll(session);
    expect(again?.runId).toBe(r.runId);
    expect(again?.job.name).toBe("test");
    const grant = await grantDownload(t.db(), s3.store(), claimsOf(again as JobTicket), {
      fromJob: "compile",
      name: "app",
    });
    expect(grant).toMatchObject({ generationId: generation, sha256: sha256(data) });
    // The artifact GC keeps the generation the new run references.
    await collectArtifactGarbage(t.db(), s3.store());
    expect((await fetch(grant.url)).status).toBe(200);
    await finish(again as JobTicket);
    const [deploy] = await claimAll(session);
    expect(deploy?.job.name).toBe("deploy");
    await finish(deploy as JobTicket);
    expect(await runStatus(t.db(), r.runId)).toMatchObject({ status: "completed", outcome: "success" });

    const events = await t.db().$queryRaw<{ n: bigint }[]>`
      SELECT count(*) AS n FROM transition_event WHERE run_id = ${r.runId}::uuid AND reason = 'pinned'`;
    expect(events[0]?.n).toBe(2n);
  });

  it("points the pins of a second re-run at the original producer", async () => {
    const tenant = await seedTenant(t.db());
    const session = await newSession(t.db(), tenant);
    const firstId = await seedFrozenRun(
      t.db(),
      tenant,
      def("version: 1\njobs:\n  - name: a\n    steps: [x]\n  - name: b\n    steps: [y]\n"),
    );
    const [a] = await claimAll(session);
    await finish(a as JobTicket);
    await finish((await claimAll(session))[0] as JobTicket, "user_failure");
    const second = await rerunFailedJobs(t.db(), { caller: member(tenant), runId: firstId });
    await finish((await claimAll(session))[0] as JobTicket, "user_failure");
    const third = await rerunFailedJobs(t.db(), { caller: member(tenant), runId: second.runId });
    expect(third.pinned).toEqual([{ jobIndex: 0, name: "a", reusedFrom: { runId: firstId, jobId: a?.jobId } }]);
  });

  it("refuses auditors, other orgs, unfinished runs and runs with nothing to re-run", async () => {
    const tenant = await seedTenant(t.db());
    const other = await seedTenant(t.db());
    const session = await newSession(t.db(), tenant);
    const runId = await seedFrozenRun(t.db(), tenant, def("version: 1\njobs:\n  - name: a\n    steps: [x]\n"));
    await expect(rerunFailedJobs(t.db(), { caller: member(tenant), runId })).rejects.toMatchObject({
      code: "RUN.NOT_FINISHED",
    });
    await finish((await claimAll(session))[0] as JobTicket);
    await expect(
      rerunFailedJobs(t.db(), { caller: { ...member(tenant), role: "auditor" }, runId }),
    ).rejects.toMatchObject({ code: "AUTH.FORBIDDEN" });
    await expect(rerunFailedJobs(t.db(), { caller: member(other), runId })).rejects.toMatchObject({
      code: "RUN.NOT_FOUND",
    });
    await expect(rerunFailedJobs(t.db(), { caller: member(tenant), runId })).rejects.toMatchObject({
      code: "RUN.NOTHING_TO_RERUN",
    });
    const runs = await t.db().$queryRaw<
      { n: bigint }[]
    >`SELECT count(*) AS n FROM workflow_run WHERE parent_run_id = ${runId}::uuid`;
    expect(runs[0]?.n).toBe(0n);
  });
});

describe("flaky jobs", () => {
  it("flags a job that passed and failed at the same commit and definition, per matrix values, never acting on it", async () => {
    const tenant = await seedTenant(t.db());
    const session = await newSession(t.db(), tenant);
    const yaml =
      "version: 1\njobs:\n  - name: it\n    steps: [x]\n    strategy:\n      matrix:\n        os: [linux, mac]\n";
    const first = await seedFrozenRun(t.db(), tenant, def(yaml));
    for (const x of await claimAll(session)) await finish(x);
    expect(await listFlakyJobs(t.db(), { orgId: tenant.orgId, repoId: tenant.repoId })).toEqual([]);
    const retried = await retryRun(t.db(), { caller: member(tenant), runId: first });
    await withTx(
      t.db(),
      "move",
      (tx) => tx.$executeRaw`UPDATE job_run SET pool = ${tenant.pool} WHERE run_id = ${retried.runId}::uuid`,
    );
    for (const x of await claimAll(session)) await finish(x, x.job.name.includes("mac") ? "user_failure" : "success");
    const flaky = await listFlakyJobs(t.db(), { orgId: tenant.orgId, repoId: tenant.repoId });
    expect(flaky).toMatchObject([
      { name: "it (os: mac)", matrix: { os: "mac" }, commits: 1, attempts: 2, last_run_id: retried.runId },
    ]);
    const view = await getRun(t.db(), { orgId: tenant.orgId, runId: retried.runId });
    expect(view.jobs.map((j) => [j.name, j.flaky])).toEqual([
      ["it (os: linux)", false],
      ["it (os: mac)", true],
    ]);
    // The first run is flagged too (same commit and definition), and nothing was quarantined.
    expect((await getRun(t.db(), { orgId: tenant.orgId, runId: first })).jobs.map((j) => j.flaky)).toEqual([
      false,
      true,
    ]);
    // Another org sees neither the list nor the repo.
    const other = await seedTenant(t.db());
    await expect(listFlakyJobs(t.db(), { orgId: other.orgId, repoId: tenant.repoId })).rejects.toMatchObject({
      code: "REPO.NOT_FOUND",
    });
  });

  it("does not count a different commit as a second opinion", async () => {
    const tenant = await seedTenant(t.db());
    const session = await newSession(t.db(), tenant);
    const d = def("version: 1\njobs:\n  - name: a\n    steps: [x]\n  - name: b\n    steps: [y]\n");
    await seedFrozenRun(t.db(), tenant, d);
    for (const x of await claimAll(session)) await finish(x);
    for (const x of await claimAll(session)) await finish(x);
    const other = await withTx(t.db(), "seed-other-commit", async (tx) => {
      const rows = await tx.$queryRaw<{ id: string }[]>`
        INSERT INTO workflow_run (org_id, repo_id, status, trust_class, trigger, commit_sha, workflow_path, workflow_hash, definition, inputs)
        VALUES (${tenant.orgId}::uuid, ${tenant.repoId}::uuid, 'running', 'trusted', 'manual', ${"b".repeat(40)}, 'w', 'hash',
                ${JSON.stringify(d)}::jsonb, '{}'::jsonb) RETURNING id`;
      await createJobs(tx, { id: rows[0]?.id ?? "", orgId: tenant.orgId }, d, tenant.pool);
      return rows[0]?.id ?? "";
    });
    await finish((await claimAll(session))[0] as JobTicket, "user_failure");
    const rerun = await rerunFailedJobs(t.db(), { caller: member(tenant), runId: other });
    expect(rerun.pinned).toEqual([]);
    expect(await listFlakyJobs(t.db(), { orgId: tenant.orgId, repoId: tenant.repoId })).toEqual([]);
  });
});

describe("the sixth outcome", () => {
  it("a job blocked by policy ends so at once: no retry, not a platform failure, and re-run runs it again", async () => {
    const tenant = await seedTenant(t.db());
    const session = await newSession(t.db(), tenant);
    const runId = await seedFrozenRun(t.db(), tenant, def("version: 1\njobs:\n  - name: a\n    steps: [x]\n"));
    const [a] = await claimAll(session);
    const r = await completeAttempt(t.db(), TEST_CFG, {
      attemptId: a?.attemptId ?? "",
      jobId: a?.jobId ?? "",
      epoch: 1,
      outcome: "blocked_by_policy",
      cause: "image.not_allowed",
      sandboxDestroyed: true,
    });
    expect(r).toEqual({ accepted: true, jobOutcome: "blocked_by_policy" });
    const rows = await t.db().$queryRaw<{ outcome: string; platform_retries: number; status: string }[]>`
      SELECT outcome, platform_retries, status FROM job_run WHERE run_id = ${runId}::uuid`;
    expect(rows).toEqual([{ outcome: "blocked_by_policy", platform_retries: 0, status: "completed" }]);
    expect(await runStatus(t.db(), runId)).toMatchObject({ outcome: "blocked_by_policy", cause: "image.not_allowed" });
    expect(await claimAll(session)).toEqual([]);
    const again = await rerunFailedJobs(t.db(), { caller: member(tenant), runId });
    expect(again.rerun.map((j) => j.name)).toEqual(["a"]);
  });
});
