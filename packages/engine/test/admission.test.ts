import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import examples from "@octokit/webhooks-examples/api.github.com/index.json" with { type: "json" };
import { sign } from "@octokit/webhooks-methods";
import { startGitServer, type TestGitServer } from "@kiln/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { admitGithubWebhook } from "../src/webhooks/admit-webhook.ts";
import { admitManualRun, manualTriggerBody } from "../src/runs/admit-manual.ts";
import { freezeRun } from "../src/runs/freeze-run.ts";
import { getRun } from "../src/runs/get-run.ts";
import { retryRun } from "../src/runs/retry-run.ts";
import { addMember } from "../src/tenants/admin.ts";
import { runStatus, seedTenant, useTestDb, type Tenant } from "./support.ts";

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

type Example = { name: string; examples: Record<string, unknown>[] };
const all = examples as unknown as Example[];
function example(event: string, pick: (e: Record<string, unknown>) => boolean = () => true): Record<string, unknown> {
  const e = all.find((x) => x.name === event)?.examples.find(pick);
  if (!e) throw new Error(`no ${event} example`);
  return structuredClone(e);
}

/** A real recorded push payload retargeted at the tenant's repo and commit, signed like GitHub does. */
async function signedPush(tenant: Tenant, sha: string, secret = "s3cret-value", sender = "Codertocat") {
  const p = example("push", (e) => (e as { deleted?: boolean }).deleted === false) as Record<string, any>;
  p.after = sha;
  p.ref = "refs/heads/main";
  p.repository.full_name = tenant.repoName;
  p.sender.login = sender;
  const body = JSON.stringify(p);
  return { rawBody: new TextEncoder().encode(body), signature: await sign(secret, body), body };
}

async function repoWithWorkflow(tenant: Tenant, yaml: string): Promise<string> {
  const repo = await git.createRepo(`${tenant.slug}.git`, { ".kiln/workflow.yaml": yaml, "README.md": "hi\n" });
  await t.db().$executeRaw`UPDATE repo SET clone_url = ${repo.cloneUrl} WHERE id = ${tenant.repoId}::uuid`;
  return repo.headSha;
}

const GOOD = "version: 1\njobs:\n  - name: build\n    steps: [echo ok]\n  - name: test\n    steps: [echo test]\n";

describe("POST /v1/webhooks/github", () => {
  it("accepts a signed push, deduplicates 20 concurrent copies into one run, and freezes it", async () => {
    const tenant = await seedTenant(t.db(), { member: "Codertocat" });
    const sha = await repoWithWorkflow(tenant, GOOD);
    const req = await signedPush(tenant, sha);
    const results = await Promise.all(
      Array.from({ length: 20 }, () =>
        admitGithubWebhook(t.db(), { ...req, event: "push", deliveryId: `d-${tenant.slug}` }),
      ),
    );
    const runIds = new Set(results.map((r) => r.runId));
    expect(runIds.size).toBe(1);
    expect(results.filter((r) => r.status === 202)).toHaveLength(1);
    expect(results.filter((r) => r.status === 200 && r.duplicate)).toHaveLength(19);
    const runId = [...runIds][0]!;
    expect(await freezeRun(t.db(), { runId, gitCacheDir: cacheDir, finalTry: false })).toBe("frozen");
    expect(await freezeRun(t.db(), { runId, gitCacheDir: cacheDir, finalTry: false })).toBe("not_pending");
    const view = await getRun(t.db(), { orgId: tenant.orgId, runId });
    expect(view).toMatchObject({
      status: "running",
      trust_class: "trusted",
      commit_sha: sha,
      trigger: "push",
      ref: "refs/heads/main",
    });
    expect(view.workflow_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(view.jobs.map((j) => [j.name, j.status, j.needs])).toEqual([
      ["build", "ready", []],
      ["test", "pending", ["build"]],
    ]);
  });

  it("refuses missing, malformed, sha1-only and wrong signatures with nothing written", async () => {
    const tenant = await seedTenant(t.db());
    const req = await signedPush(tenant, "b".repeat(40));
    const bad = [null, "sha256=zz", `sha1=${"a".repeat(40)}`, await sign("wrong-secret", req.body)];
    for (const signature of bad) {
      await expect(
        admitGithubWebhook(t.db(), { ...req, signature, event: "push", deliveryId: `x-${signature}` }),
      ).rejects.toMatchObject({ code: "WEBHOOK.BAD_SIGNATURE" });
    }
    const rows = await t.db().$queryRaw<
      { n: bigint }[]
    >`SELECT count(*) AS n FROM webhook_delivery WHERE repo_id = ${tenant.repoId}::uuid`;
    expect(rows[0]?.n).toBe(0n);
  });

  it("a push by a non-member is untrusted; a branch deletion starts nothing; ping is answered", async () => {
    const tenant = await seedTenant(t.db());
    const req = await signedPush(tenant, "c".repeat(40), "s3cret-value", "stranger");
    const r = await admitGithubWebhook(t.db(), { ...req, event: "push", deliveryId: `n-${tenant.slug}` });
    expect(r.status).toBe(202);
    expect((await getRun(t.db(), { orgId: tenant.orgId, runId: r.runId! })).trust_class).toBe("untrusted");

    const del = example("push", (e) => (e as { deleted?: boolean }).deleted === true) as Record<string, any>;
    del.repository.full_name = tenant.repoName;
    const delBody = JSON.stringify(del);
    const d = await admitGithubWebhook(t.db(), {
      rawBody: new TextEncoder().encode(delBody),
      signature: await sign("s3cret-value", delBody),
      event: "push",
      deliveryId: `del-${tenant.slug}`,
    });
    expect(d).toMatchObject({ status: 200, runId: null });

    const ping = example("ping") as Record<string, any>;
    ping.repository = { ...(ping.repository ?? {}), full_name: tenant.repoName };
    const pingBody = JSON.stringify(ping);
    const pr = await admitGithubWebhook(t.db(), {
      rawBody: new TextEncoder().encode(pingBody),
      signature: await sign("s3cret-value", pingBody),
      event: "ping",
      deliveryId: `ping-${tenant.slug}`,
    });
    expect(pr).toMatchObject({ status: 200, runId: null, ignored: "ping" });
  });

  it("a pull request from a fork is untrusted even when a member opened it", async () => {
    const tenant = await seedTenant(t.db(), { member: "Codertocat" });
    const p = example("pull_request", (e) => (e as { action?: string }).action === "opened") as Record<string, any>;
    p.repository.full_name = tenant.repoName;
    p.pull_request.base.repo.full_name = tenant.repoName;
    p.pull_request.head.repo = { ...p.pull_request.head.repo, full_name: "someone-else/fork" };
    p.sender.login = "Codertocat";
    const body = JSON.stringify(p);
    const r = await admitGithubWebhook(t.db(), {
      rawBody: new TextEncoder().encode(body),
      signature: await sign("s3cret-value", body),
      event: "pull_request",
      deliveryId: `pr-${tenant.slug}`,
    });
    expect(r.status).toBe(202);
    const view = await getRun(t.db(), { orgId: tenant.orgId, runId: r.runId! });
    expect(view).toMatchObject({
      trust_class: "untrusted",
      trigger: "pull_request",
      commit_sha: p.pull_request.head.sha,
    });

    p.pull_request.head.repo.full_name = tenant.repoName;
    const same = JSON.stringify(p);
    const r2 = await admitGithubWebhook(t.db(), {
      rawBody: new TextEncoder().encode(same),
      signature: await sign("s3cret-value", same),
      event: "pull_request",
      deliveryId: `pr2-${tenant.slug}`,
    });
    expect((await getRun(t.db(), { orgId: tenant.orgId, runId: r2.runId! })).trust_class).toBe("trusted");
  });
});

describe("freezing", () => {
  it("a bad workflow file ends the run as user_failure workflow.invalid naming the line", async () => {
    const tenant = await seedTenant(t.db(), { member: "Codertocat" });
    const sha = await repoWithWorkflow(tenant, "version: 1\njobs:\n  - name: build\n    stepz: [echo]\n");
    const req = await signedPush(tenant, sha);
    const r = await admitGithubWebhook(t.db(), { ...req, event: "push", deliveryId: `bad-${tenant.slug}` });
    expect(await freezeRun(t.db(), { runId: r.runId!, gitCacheDir: cacheDir, finalTry: false })).toBe("invalid");
    const view = await getRun(t.db(), { orgId: tenant.orgId, runId: r.runId! });
    expect(view).toMatchObject({ status: "completed", outcome: "user_failure", cause: "workflow.invalid" });
    expect(view.cause_message).toMatch(/line 4/);
    expect(view.jobs).toHaveLength(0);
  });

  it("a commit that does not exist is a user failure; an unreachable server is retried, then a platform failure", async () => {
    const tenant = await seedTenant(t.db(), { member: "Codertocat" });
    await repoWithWorkflow(tenant, GOOD);
    const missing = await admitGithubWebhook(t.db(), {
      ...(await signedPush(tenant, "d".repeat(40))),
      event: "push",
      deliveryId: `miss-${tenant.slug}`,
    });
    expect(await freezeRun(t.db(), { runId: missing.runId!, gitCacheDir: cacheDir, finalTry: false })).toBe("invalid");
    expect(await runStatus(t.db(), missing.runId!)).toMatchObject({
      outcome: "user_failure",
      cause: "workflow.not_found",
    });

    await t.db()
      .$executeRaw`UPDATE repo SET clone_url = 'http://127.0.0.1:9/nothing.git' WHERE id = ${tenant.repoId}::uuid`;
    const down = await admitGithubWebhook(t.db(), {
      ...(await signedPush(tenant, "e".repeat(40))),
      event: "push",
      deliveryId: `down-${tenant.slug}`,
    });
    expect(await freezeRun(t.db(), { runId: down.runId!, gitCacheDir: cacheDir, finalTry: false })).toBe("retry_later");
    expect((await runStatus(t.db(), down.runId!)).status).toBe("pending");
    expect(await freezeRun(t.db(), { runId: down.runId!, gitCacheDir: cacheDir, finalTry: true })).toBe("gave_up");
    expect(await runStatus(t.db(), down.runId!)).toMatchObject({
      outcome: "platform_failure",
      cause: "source.unreachable",
    });
  });

  it("reads the file at the pinned commit even after the branch moves", async () => {
    const tenant = await seedTenant(t.db(), { member: "Codertocat" });
    const repo = await git.createRepo(`${tenant.slug}-moving.git`, { ".kiln/workflow.yaml": GOOD });
    await t.db().$executeRaw`UPDATE repo SET clone_url = ${repo.cloneUrl} WHERE id = ${tenant.repoId}::uuid`;
    const first = repo.headSha;
    await repo.commit({ ".kiln/workflow.yaml": "version: 1\njobs:\n  - name: other\n    steps: [echo]\n" });
    const r = await admitGithubWebhook(t.db(), {
      ...(await signedPush(tenant, first)),
      event: "push",
      deliveryId: `pin-${tenant.slug}`,
    });
    await freezeRun(t.db(), { runId: r.runId!, gitCacheDir: cacheDir, finalTry: false });
    const view = await getRun(t.db(), { orgId: tenant.orgId, runId: r.runId! });
    expect(view.jobs.map((j) => j.name)).toEqual(["build", "test"]);
  });
});

describe("manual trigger and retry", () => {
  const body = (sha: string, inputs: Record<string, string> = {}) =>
    manualTriggerBody.parse({ workflow_path: ".kiln/workflow.yaml", commit_sha: sha, inputs });

  it("same key and body -> same run; different body -> 422; in flight -> 409", async () => {
    const tenant = await seedTenant(t.db());
    const caller = { tokenId: tenant.tokenId, orgId: tenant.orgId, role: "member" as const, name: "t" };
    const a = await admitManualRun(t.db(), {
      caller,
      repoId: tenant.repoId,
      idempotencyKey: "k1",
      body: body("a".repeat(40)),
    });
    const b = await admitManualRun(t.db(), {
      caller,
      repoId: tenant.repoId,
      idempotencyKey: "k1",
      body: body("a".repeat(40)),
    });
    expect(b.runId).toBe(a.runId);
    await expect(
      admitManualRun(t.db(), { caller, repoId: tenant.repoId, idempotencyKey: "k1", body: body("b".repeat(40)) }),
    ).rejects.toMatchObject({ code: "IDEMPOTENCY.KEY_REUSED" });
    await t.db().$executeRaw`
      INSERT INTO idempotency_key (caller_id, repo_id, key, request_digest, state) SELECT caller_id, repo_id, 'k2', request_digest, 'in_flight'
      FROM idempotency_key WHERE key = 'k1' AND caller_id = ${tenant.tokenId}::uuid`;
    await expect(
      admitManualRun(t.db(), { caller, repoId: tenant.repoId, idempotencyKey: "k2", body: body("a".repeat(40)) }),
    ).rejects.toMatchObject({ code: "IDEMPOTENCY.IN_FLIGHT" });
    const concurrent = await Promise.allSettled(
      Array.from({ length: 10 }, () =>
        admitManualRun(t.db(), { caller, repoId: tenant.repoId, idempotencyKey: "k3", body: body("c".repeat(40)) }),
      ),
    );
    const ok = concurrent
      .filter((c) => c.status === "fulfilled")
      .map((c) => (c as PromiseFulfilledResult<{ runId: string }>).value.runId);
    expect(new Set(ok).size).toBe(1);
    for (const c of concurrent)
      if (c.status === "rejected") expect(c.reason).toMatchObject({ code: "IDEMPOTENCY.IN_FLIGHT" });
    expect(await runStatus(t.db(), a.runId)).toMatchObject({ status: "pending" });
  });

  it("another org's repo and run are not found; an auditor cannot trigger", async () => {
    const a = await seedTenant(t.db());
    const b = await seedTenant(t.db());
    const callerB = { tokenId: b.tokenId, orgId: b.orgId, role: "member" as const, name: "b" };
    await expect(
      admitManualRun(t.db(), { caller: callerB, repoId: a.repoId, idempotencyKey: "x", body: body("a".repeat(40)) }),
    ).rejects.toMatchObject({ code: "REPO.NOT_FOUND" });
    const run = await admitManualRun(t.db(), {
      caller: { ...callerB, orgId: a.orgId, tokenId: a.tokenId },
      repoId: a.repoId,
      idempotencyKey: "y",
      body: body("a".repeat(40)),
    });
    await expect(getRun(t.db(), { orgId: b.orgId, runId: run.runId })).rejects.toMatchObject({ code: "RUN.NOT_FOUND" });
    await expect(retryRun(t.db(), { caller: callerB, runId: run.runId })).rejects.toMatchObject({
      code: "RUN.NOT_FOUND",
    });
    await expect(
      admitManualRun(t.db(), {
        caller: { ...callerB, role: "auditor" },
        repoId: b.repoId,
        idempotencyKey: "z",
        body: body("a".repeat(40)),
      }),
    ).rejects.toMatchObject({ code: "AUTH.FORBIDDEN" });
  });

  it("retry pins the parent's definition and inherits an untrusted class", async () => {
    const tenant = await seedTenant(t.db());
    await addMember(t.db(), { orgSlug: tenant.slug, login: "m", role: "member" });
    const sha = await repoWithWorkflow(tenant, GOOD);
    const req = await signedPush(tenant, sha, "s3cret-value", "not-a-member");
    const r = await admitGithubWebhook(t.db(), { ...req, event: "push", deliveryId: `rt-${tenant.slug}` });
    await freezeRun(t.db(), { runId: r.runId!, gitCacheDir: cacheDir, finalTry: false });
    const caller = { tokenId: tenant.tokenId, orgId: tenant.orgId, role: "member" as const, name: "m" };
    await expect(retryRun(t.db(), { caller, runId: r.runId! })).rejects.toMatchObject({ code: "RUN.NOT_FINISHED" });
    await t.db()
      .$executeRaw`UPDATE job_run SET status = 'completed', outcome = 'user_failure', cause = 'step.failed' WHERE run_id = ${r.runId!}::uuid`;
    await t.db()
      .$executeRaw`UPDATE workflow_run SET status = 'completed', outcome = 'user_failure' WHERE id = ${r.runId!}::uuid`;
    const child = await retryRun(t.db(), { caller, runId: r.runId! });
    const view = await getRun(t.db(), { orgId: tenant.orgId, runId: child.runId });
    const parent = await getRun(t.db(), { orgId: tenant.orgId, runId: r.runId! });
    expect(view).toMatchObject({
      parent_run_id: r.runId,
      trust_class: "untrusted",
      trigger: "retry",
      workflow_hash: parent.workflow_hash,
      commit_sha: sha,
      status: "running",
    });
    expect(view.jobs.map((j) => [j.name, j.status])).toEqual([
      ["build", "ready"],
      ["test", "pending"],
    ]);
  });
});
