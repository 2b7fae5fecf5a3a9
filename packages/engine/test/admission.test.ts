import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
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
import { authenticateApiToken } from "../src/identity/authenticate.ts";
import { addMember, createMemberApiToken } from "../src/tenants/index.ts";
import { LOCAL_SOURCE, runStatus, seedTenant, useTestDb, type Tenant } from "./support.ts";

const t = useTestDb();
/** The recorded payloads' sender (GitHub's numeric user id of Codertocat). */
const CODERTOCAT = 21031067;
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

/** Plain git for building branch layouts on the test server (a tenant's own pushes). */
function runGitIn(cwd: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) =>
    execFile("git", args, { cwd }, (err, stdout) => (err ? reject(err) : resolve(stdout))),
  );
}

type Example = { name: string; examples: Record<string, unknown>[] };
const all = examples as unknown as Example[];
function example(event: string, pick: (e: Record<string, unknown>) => boolean = () => true): Record<string, unknown> {
  const e = all.find((x) => x.name === event)?.examples.find(pick);
  if (!e) throw new Error(`no ${event} example`);
  return structuredClone(e);
}

/** A real recorded push payload retargeted at the tenant's repo and commit, signed like GitHub does. */
async function signedPush(
  tenant: Tenant,
  sha: string,
  secret = "s3cret-value",
  sender = "Codertocat",
  senderId = sender === "Codertocat" ? CODERTOCAT : 9_000_001,
) {
  const p = example("push", (e) => (e as { deleted?: boolean }).deleted === false) as Record<string, any>;
  p.after = sha;
  p.ref = "refs/heads/main";
  p.repository.full_name = tenant.repoName;
  p.sender.login = sender;
  p.sender.id = senderId;
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
    const tenant = await seedTenant(t.db(), { member: "Codertocat", forgeId: CODERTOCAT });
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
    expect(await freezeRun(t.db(), { runId, gitCacheDir: cacheDir, source: LOCAL_SOURCE, finalTry: false })).toBe(
      "frozen",
    );
    expect(await freezeRun(t.db(), { runId, gitCacheDir: cacheDir, source: LOCAL_SOURCE, finalTry: false })).toBe(
      "not_pending",
    );
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
    // One repository, one forge id (the ping example's differs; ids are pinned, issue 28).
    ping.repository = { ...(ping.repository ?? {}), full_name: tenant.repoName, id: del.repository.id };
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
    const tenant = await seedTenant(t.db(), { member: "Codertocat", forgeId: CODERTOCAT });
    const p = example("pull_request", (e) => (e as { action?: string }).action === "opened") as Record<string, any>;
    p.repository.full_name = tenant.repoName;
    p.pull_request.base.repo.full_name = tenant.repoName;
    p.pull_request.head.repo = { ...p.pull_request.head.repo, full_name: "someone-else/fork" };
    p.sender.login = "Codertocat";
    p.sender.id = CODERTOCAT;
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

describe("webhook senders are matched by forge id, not login", () => {
  it("a sender with a member's old login but another id is untrusted; the renamed member stays trusted", async () => {
    const tenant = await seedTenant(t.db(), { member: "octo-old", forgeId: 5_550_001 });
    const sha = await repoWithWorkflow(tenant, GOOD);
    // GitHub account 5550001 renames itself to octo-new; someone else registers octo-old.
    const impostor = await signedPush(tenant, sha, "s3cret-value", "octo-old", 5_550_999);
    const r1 = await admitGithubWebhook(t.db(), { ...impostor, event: "push", deliveryId: `imp-${tenant.slug}` });
    expect((await getRun(t.db(), { orgId: tenant.orgId, runId: r1.runId! })).trust_class).toBe("untrusted");
    const renamed = await signedPush(tenant, sha, "s3cret-value", "octo-new", 5_550_001);
    const r2 = await admitGithubWebhook(t.db(), { ...renamed, event: "push", deliveryId: `ren-${tenant.slug}` });
    expect((await getRun(t.db(), { orgId: tenant.orgId, runId: r2.runId! })).trust_class).toBe("trusted");
    // The run names the member by forge id too (separation of duties by person, issue 28); the
    // impostor with the member's old login is nobody.
    const personOf = async (runId: string) =>
      (
        await t.db().$queryRaw<{ login: string | null }[]>`
          SELECT u.login FROM workflow_run r LEFT JOIN app_user u ON u.id = r.actor_user_id WHERE r.id = ${runId}::uuid`
      )[0]?.login;
    expect(await personOf(r2.runId!)).toBe("octo-old");
    expect(await personOf(r1.runId!)).toBeNull();
    // A sender without an id, or a member recorded without one, is never trusted.
    const noId = await signedPush(tenant, sha, "s3cret-value", "legacy");
    const legacyPayload = JSON.parse(noId.body) as Record<string, any>;
    delete legacyPayload.sender.id;
    const legacyBody = JSON.stringify(legacyPayload);
    await addMember(t.db(), { orgSlug: tenant.slug, login: "legacy", role: "member" });
    const r3 = await admitGithubWebhook(t.db(), {
      rawBody: new TextEncoder().encode(legacyBody),
      signature: await sign("s3cret-value", legacyBody),
      event: "push",
      deliveryId: `leg-${tenant.slug}`,
    });
    expect((await getRun(t.db(), { orgId: tenant.orgId, runId: r3.runId! })).trust_class).toBe("untrusted");
  });

  it("member add follows a rename by forge id and refuses a login recorded for another id", async () => {
    const tenant = await seedTenant(t.db(), { member: "rn-old", forgeId: 5_560_001 });
    const again = await addMember(t.db(), { orgSlug: tenant.slug, login: "rn-new", role: "admin", forgeId: 5_560_001 });
    const rows = await t.db().$queryRaw<{ login: string; role: string }[]>`
      SELECT u.login, m.role FROM app_user u JOIN membership m ON m.user_id = u.id WHERE u.id = ${again.userId}::uuid`;
    expect(rows).toEqual([{ login: "rn-new", role: "admin" }]);
    await expect(
      addMember(t.db(), { orgSlug: tenant.slug, login: "rn-new", role: "member", forgeId: 5_560_002 }),
    ).rejects.toMatchObject({
      code: "REQUEST.INVALID",
      message: expect.stringMatching(/recorded for forge id 5560001/),
    });
  });
});

describe("freezing", () => {
  it("a bad workflow file ends the run as user_failure workflow.invalid naming the line", async () => {
    const tenant = await seedTenant(t.db(), { member: "Codertocat", forgeId: CODERTOCAT });
    const sha = await repoWithWorkflow(tenant, "version: 1\njobs:\n  - name: build\n    stepz: [echo]\n");
    const req = await signedPush(tenant, sha);
    const r = await admitGithubWebhook(t.db(), { ...req, event: "push", deliveryId: `bad-${tenant.slug}` });
    expect(
      await freezeRun(t.db(), { runId: r.runId!, gitCacheDir: cacheDir, source: LOCAL_SOURCE, finalTry: false }),
    ).toBe("invalid");
    const view = await getRun(t.db(), { orgId: tenant.orgId, runId: r.runId! });
    expect(view).toMatchObject({ status: "completed", outcome: "user_failure", cause: "workflow.invalid" });
    expect(view.cause_message).toMatch(/line 4/);
    expect(view.jobs).toHaveLength(0);
  });

  it("a commit that does not exist is a user failure; an unreachable server is retried, then a platform failure", async () => {
    const tenant = await seedTenant(t.db(), { member: "Codertocat", forgeId: CODERTOCAT });
    await repoWithWorkflow(tenant, GOOD);
    const missing = await admitGithubWebhook(t.db(), {
      ...(await signedPush(tenant, "d".repeat(40))),
      event: "push",
      deliveryId: `miss-${tenant.slug}`,
    });
    expect(
      await freezeRun(t.db(), { runId: missing.runId!, gitCacheDir: cacheDir, source: LOCAL_SOURCE, finalTry: false }),
    ).toBe("invalid");
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
    expect(
      await freezeRun(t.db(), { runId: down.runId!, gitCacheDir: cacheDir, source: LOCAL_SOURCE, finalTry: false }),
    ).toBe("retry_later");
    expect((await runStatus(t.db(), down.runId!)).status).toBe("pending");
    expect(
      await freezeRun(t.db(), { runId: down.runId!, gitCacheDir: cacheDir, source: LOCAL_SOURCE, finalTry: true }),
    ).toBe("gave_up");
    expect(await runStatus(t.db(), down.runId!)).toMatchObject({
      outcome: "platform_failure",
      cause: "source.unreachable",
    });
  });

  it("reads the file at the pinned commit even after the branch moves", async () => {
    const tenant = await seedTenant(t.db(), { member: "Codertocat", forgeId: CODERTOCAT });
    const repo = await git.createRepo(`${tenant.slug}-moving.git`, { ".kiln/workflow.yaml": GOOD });
    await t.db().$executeRaw`UPDATE repo SET clone_url = ${repo.cloneUrl} WHERE id = ${tenant.repoId}::uuid`;
    const first = repo.headSha;
    await repo.commit({ ".kiln/workflow.yaml": "version: 1\njobs:\n  - name: other\n    steps: [echo]\n" });
    const r = await admitGithubWebhook(t.db(), {
      ...(await signedPush(tenant, first)),
      event: "push",
      deliveryId: `pin-${tenant.slug}`,
    });
    await freezeRun(t.db(), { runId: r.runId!, gitCacheDir: cacheDir, source: LOCAL_SOURCE, finalTry: false });
    const view = await getRun(t.db(), { orgId: tenant.orgId, runId: r.runId! });
    expect(view.jobs.map((j) => j.name)).toEqual(["build", "test"]);
  });
});

describe("manual trigger and retry", () => {
  const body = (sha: string, extra: { ref?: string } = {}) =>
    manualTriggerBody.parse({ workflow_path: ".kiln/workflow.yaml", commit_sha: sha, inputs: {}, ...extra });
  // Local repositories enabled (the loopback git server), as `npm run up` does.
  const source = () => ({ gitCacheDir: path.join(cacheDir, "ref-check"), policy: { localReposRoot: "/" } });
  /** The tenant's repo on the git server with three commits on main, oldest first. */
  async function threeCommits(tenant: Tenant) {
    const repo = await git.createRepo(`${tenant.slug}-m.git`, { ".kiln/workflow.yaml": GOOD });
    const a = repo.headSha;
    const b = await repo.commit({ "b.txt": "b\n" });
    const c = await repo.commit({ "c.txt": "c\n" });
    await t.db().$executeRaw`UPDATE repo SET clone_url = ${repo.cloneUrl} WHERE id = ${tenant.repoId}::uuid`;
    return { a, b, c, repo };
  }

  it("same key and body -> same run; different body -> 422; in flight -> 409", async () => {
    const tenant = await seedTenant(t.db());
    const sha = await threeCommits(tenant);
    const caller = { tokenId: tenant.tokenId, orgId: tenant.orgId, role: "member" as const, name: "t" };
    const admit = (key: string, commit: string) =>
      admitManualRun(t.db(), {
        caller,
        repoId: tenant.repoId,
        idempotencyKey: key,
        body: body(commit),
        source: source(),
      });
    const a = await admit("k1", sha.a);
    const b = await admit("k1", sha.a);
    expect(b.runId).toBe(a.runId);
    await expect(admit("k1", sha.b)).rejects.toMatchObject({ code: "IDEMPOTENCY.KEY_REUSED" });
    await t.db().$executeRaw`
      INSERT INTO idempotency_key (caller_id, repo_id, key, request_digest, state) SELECT caller_id, repo_id, 'k2', request_digest, 'in_flight'
      FROM idempotency_key WHERE key = 'k1' AND caller_id = ${tenant.tokenId}::uuid`;
    await expect(admit("k2", sha.a)).rejects.toMatchObject({ code: "IDEMPOTENCY.IN_FLIGHT" });
    const concurrent = await Promise.allSettled(Array.from({ length: 10 }, () => admit("k3", sha.c)));
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
    const shaA = (await threeCommits(a)).a;
    const callerB = { tokenId: b.tokenId, orgId: b.orgId, role: "member" as const, name: "b" };
    await expect(
      admitManualRun(t.db(), {
        caller: callerB,
        repoId: a.repoId,
        idempotencyKey: "x",
        body: body(shaA),
        source: source(),
      }),
    ).rejects.toMatchObject({ code: "REPO.NOT_FOUND" });
    const run = await admitManualRun(t.db(), {
      caller: { ...callerB, orgId: a.orgId, tokenId: a.tokenId },
      repoId: a.repoId,
      idempotencyKey: "y",
      body: body(shaA),
      source: source(),
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
        body: body(shaA),
        source: source(),
      }),
    ).rejects.toMatchObject({ code: "AUTH.FORBIDDEN" });
  });

  it("records the member behind a run: a personal token names its member, an org token nobody (issue 28)", async () => {
    const tenant = await seedTenant(t.db());
    const sha = await threeCommits(tenant);
    const login = `pat-${tenant.slug}`;
    const m = await addMember(t.db(), { orgSlug: tenant.slug, login, role: "member" });
    const personal = await authenticateApiToken(
      t.db(),
      `Bearer ${(await createMemberApiToken(t.db(), { orgSlug: tenant.slug, login })).token}`,
    );
    const orgToken = await authenticateApiToken(t.db(), `Bearer ${tenant.token}`);
    const admit = (caller: typeof personal, key: string) =>
      admitManualRun(t.db(), {
        caller,
        repoId: tenant.repoId,
        idempotencyKey: key,
        body: body(sha.a),
        source: source(),
      });
    const actorOf = async (runId: string) =>
      (
        await t.db().$queryRaw<{ actor: string; actor_user_id: string | null }[]>`
          SELECT actor, actor_user_id FROM workflow_run WHERE id = ${runId}::uuid`
      )[0];
    // The actor string is the token's name; the person is the member it acts as.
    const mine = await admit(personal, "p1");
    expect(await actorOf(mine.runId)).toEqual({ actor: personal.name, actor_user_id: m.userId });
    const anon = await admit(orgToken, "o1");
    expect(await actorOf(anon.runId)).toEqual({ actor: orgToken.name, actor_user_id: null });
  });

  it("names a ref (default: the repo's default branch); a commit not reachable from it is refused with its code", async () => {
    const tenant = await seedTenant(t.db());
    const sha = await threeCommits(tenant);
    // A branch `feature` forked at b with a commit of its own, and a commit nobody's branch holds.
    const work = await mkdtemp(path.join(os.tmpdir(), "kiln-ref-"));
    const g = (...args: string[]) => runGitIn(work, args);
    // Straight into the server's bare repository (the test server serves fetches, not pushes).
    await g("clone", "-q", path.join(gitRoot, `${tenant.slug}-m.git`), ".");
    await g("checkout", "-q", "-b", "feature", sha.b);
    await writeFile(path.join(work, "f.txt"), "feature\n");
    await g("add", "f.txt");
    await g("-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "feature");
    const featureTip = (await g("rev-parse", "HEAD")).trim();
    await g("push", "-q", "origin", "feature");
    await g("checkout", "-q", "--detach", sha.a);
    await writeFile(path.join(work, "orphan.txt"), "nowhere\n");
    await g("add", "orphan.txt");
    await g("-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "dangling");
    const dangling = (await g("rev-parse", "HEAD")).trim();
    await g("push", "-q", "origin", `${dangling}:refs/pull/7/head`);
    await rm(work, { recursive: true, force: true });

    const caller = { tokenId: tenant.tokenId, orgId: tenant.orgId, role: "member" as const, name: "t" };
    const admit = (key: string, b: ReturnType<typeof body>) =>
      admitManualRun(t.db(), { caller, repoId: tenant.repoId, idempotencyKey: key, body: b, source: source() });
    const refOf = async (runId: string) =>
      (await t.db().$queryRaw<{ ref: string }[]>`SELECT ref FROM workflow_run WHERE id = ${runId}::uuid`)[0]?.ref;

    // Default: the repo's default branch.
    expect(await refOf((await admit("d1", body(sha.b))).runId)).toBe("refs/heads/main");
    // On its branch, by bare name or full ref; an ancestor of the tip counts.
    expect(await refOf((await admit("f1", body(featureTip, { ref: "feature" }))).runId)).toBe("refs/heads/feature");
    expect(await refOf((await admit("f2", body(sha.a, { ref: "refs/heads/feature" }))).runId)).toBe(
      "refs/heads/feature",
    );
    // The feature commit is not on main; the fork-PR-like commit is on no branch; c is past feature's fork point.
    for (const [key, b] of [
      ["n1", body(featureTip)],
      ["n2", body(dangling)],
      ["n3", body(dangling, { ref: "main" })],
      ["n4", body(sha.c, { ref: "feature" })],
    ] as const) {
      await expect(admit(key, b), key).rejects.toMatchObject({ code: "RUN.COMMIT_NOT_ON_REF" });
    }
    await expect(admit("u1", body(sha.a, { ref: "no-such-branch" }))).rejects.toMatchObject({
      code: "REPO.REF_NOT_FOUND",
    });
    expect(() => body(sha.a, { ref: "refs/pull/7/head" })).toThrow(/branch name/);
    // A refusal releases its key: the corrected request under the same key is admitted.
    expect(await refOf((await admit("n1", body(featureTip, { ref: "feature" }))).runId)).toBe("refs/heads/feature");
    // The default branch is the repo's, not always main.
    await t.db().$executeRaw`UPDATE repo SET default_branch = 'feature' WHERE id = ${tenant.repoId}::uuid`;
    expect(await refOf((await admit("d2", body(featureTip))).runId)).toBe("refs/heads/feature");
  });

  it("retry pins the parent's definition and inherits an untrusted class", async () => {
    const tenant = await seedTenant(t.db());
    await addMember(t.db(), { orgSlug: tenant.slug, login: "m", role: "member" });
    const sha = await repoWithWorkflow(tenant, GOOD);
    const req = await signedPush(tenant, sha, "s3cret-value", "not-a-member");
    const r = await admitGithubWebhook(t.db(), { ...req, event: "push", deliveryId: `rt-${tenant.slug}` });
    await freezeRun(t.db(), { runId: r.runId!, gitCacheDir: cacheDir, source: LOCAL_SOURCE, finalTry: false });
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
