// Private checkouts (issue 28): a repo's sealed forge token reaches the agent's git fetch (and the
// freeze's), on a real PostgreSQL and a real git server that answers 401 without basic auth.
// Attacked from the hostile side: the ticket, another org's job, a stale attempt, a clone URL off
// the forge's host, a wrong token.
import { randomUUID } from "node:crypto";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { sign } from "@octokit/webhooks-methods";
import { runGit } from "@kiln/oci";
import { startGitServer, type TestGitRepo, type TestGitServer } from "@kiln/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { completeAttempt } from "../../src/attempts/complete-attempt.ts";
import { claimJob, type JobTicket } from "../../src/dispatch/claim-job.ts";
import { sealSecret } from "../../src/forge/secret-box.ts";
import { issueSourceCredential } from "../../src/forge/source-credential.ts";
import { authenticateJobToken } from "../../src/identity/authenticate.ts";
import { checkCommitOnRef } from "../../src/runs/commit-on-ref.ts";
import { freezeRun } from "../../src/runs/freeze-run.ts";
import { resolveBranchHead } from "../../src/schedules/branch-head.ts";
import { getRun } from "../../src/runs/get-run.ts";
import { admitGithubWebhook } from "../../src/webhooks/admit-webhook.ts";
import { def, newSession, seedFrozenRun, seedTenant, TEST_CFG, TWO_JOBS, useTestDb, type Tenant } from "../support.ts";
import { forgeCfg, pushPayload } from "./support.ts";

const t = useTestDb();
const TOKEN = "ghp_PrivateRepoToken0123456789abcdefABCD";
const CODERTOCAT = 21031067;
let tmp: string;
let server: TestGitServer;
let repo: TestGitRepo;
// The forge's API on the git server's host (as api.github.com serves github.com's repos).
const forge = forgeCfg("http://127.0.0.1:9");
const KEY = forge.secretsKey!;

beforeAll(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), "kiln-private-src-"));
  server = await startGitServer({
    rootDir: path.join(tmp, "forge"),
    basicAuth: { username: "x-access-token", password: TOKEN },
  });
  repo = await server.createRepo("acme/private", {
    ".kiln/workflow.yaml": "version: 1\njobs:\n  - name: build\n    steps: [echo ok]\n",
  });
});
afterAll(async () => {
  await server.stop();
  await rm(tmp, { recursive: true, force: true });
});

async function privateTenant(token: string | null = TOKEN): Promise<Tenant> {
  const tenant = await seedTenant(t.db(), { member: "Codertocat", forgeId: CODERTOCAT });
  await t.db().$executeRaw`UPDATE repo SET clone_url = ${repo.cloneUrl} WHERE id = ${tenant.repoId}::uuid`;
  if (token)
    await t.db().$executeRaw`
      INSERT INTO repo_forge (repo_id, token_enc) VALUES (${tenant.repoId}::uuid, ${sealSecret(KEY, token, tenant.repoId)})`;
  return tenant;
}

async function claimed(tenant: Tenant): Promise<JobTicket> {
  await seedFrozenRun(t.db(), tenant, def(TWO_JOBS));
  const session = await newSession(t.db(), tenant);
  const r = await claimJob(t.db(), TEST_CFG, { sessionId: session, claimRequestId: randomUUID() });
  if (r.kind !== "claimed") throw new Error("nothing claimed");
  return r.ticket;
}

const claimsOf = (ticket: JobTicket, jobId = ticket.jobId) =>
  authenticateJobToken(t.db(), `Bearer ${ticket.jobToken}`, jobId);

describe("the source credential of a private repo", () => {
  it("goes to the repo's current attempt, fetches the private commit, and is in neither the ticket nor the URL", async () => {
    const tenant = await privateTenant();
    const ticket = await claimed(tenant);
    expect(JSON.stringify(ticket)).not.toContain(TOKEN);
    expect(ticket.source.cloneUrl).toBe(repo.cloneUrl);
    const answer = await issueSourceCredential(t.db(), forge, await claimsOf(ticket), { epoch: ticket.epoch });
    expect(answer).toEqual({
      credential: { username: "x-access-token", password: TOKEN, scope: tenant.repoId },
      reason: null,
    });
    // What the agent does with it: a git fetch with the credential in git's environment only.
    const dir = path.join(tmp, "fetch-ok");
    await runGit(["init", "-q", dir], { what: "init" });
    await runGit(["-C", dir, "fetch", "-q", "--depth", "1", "--", repo.cloneUrl, repo.headSha], {
      what: "fetch",
      protocols: ["http"],
      httpAuth: { url: repo.cloneUrl, username: "x-access-token", password: TOKEN },
    });
    expect(await readFile(path.join(dir, ".git", "config"), "utf8")).not.toContain(TOKEN);
    expect(await readFile(path.join(dir, ".git", "FETCH_HEAD"), "utf8")).not.toContain(TOKEN);
  });

  it("never goes to another org's job, to another job's token, or to a stale attempt", async () => {
    const victim = await privateTenant();
    const victimTicket = await claimed(victim);
    // Another org registers the very same URL, without a credential.
    const attacker = await privateTenant(null);
    const own = await claimed(attacker);
    expect(await issueSourceCredential(t.db(), forge, await claimsOf(own), { epoch: own.epoch })).toMatchObject({
      credential: null,
      reason: expect.stringMatching(/no forge token/),
    });
    // Its job token named against the victim's job is refused before anything is read.
    await expect(claimsOf(own, victimTicket.jobId)).rejects.toMatchObject({ code: "AUTH.FORBIDDEN" });
    // An epoch the token does not name, and an attempt that is over.
    const claims = await claimsOf(victimTicket);
    await expect(issueSourceCredential(t.db(), forge, claims, { epoch: victimTicket.epoch + 1 })).rejects.toMatchObject(
      { code: "ATTEMPT.STALE_EPOCH" },
    );
    await completeAttempt(t.db(), TEST_CFG, {
      attemptId: victimTicket.attemptId,
      jobId: victimTicket.jobId,
      epoch: victimTicket.epoch,
      outcome: "success",
      sandboxDestroyed: true,
    });
    await expect(issueSourceCredential(t.db(), forge, claims, { epoch: victimTicket.epoch })).rejects.toMatchObject({
      code: "ATTEMPT.STALE_EPOCH",
    });
  });

  it("never goes to a clone URL off the forge's host", async () => {
    const tenant = await privateTenant();
    const ticket = await claimed(tenant);
    const elsewhere = forgeCfg("https://api.github.com");
    const answer = await issueSourceCredential(t.db(), elsewhere, await claimsOf(ticket), { epoch: ticket.epoch });
    expect(answer.credential).toBeNull();
    expect(answer.reason).toMatch(/not the forge's \(github\.com\)/);
  });

  it("freezes a private repo's run with the credential; without it, or with a wrong one, a user failure that says so", async () => {
    const push = async (tenant: Tenant) => {
      const body = JSON.stringify(pushPayload(tenant.repoName, repo.headSha, CODERTOCAT));
      const r = await admitGithubWebhook(t.db(), {
        rawBody: new TextEncoder().encode(body),
        signature: await sign("s3cret-value", body),
        event: "push",
        deliveryId: randomUUID(),
      });
      return r.runId!;
    };
    const freeze = (runId: string) =>
      freezeRun(t.db(), {
        runId,
        gitCacheDir: path.join(tmp, "cache"),
        source: server.sourcePolicy,
        finalTry: false,
        forge,
      });
    const ok = await privateTenant();
    expect(await freeze(await push(ok))).toBe("frozen");
    for (const tenant of [await privateTenant(null), await privateTenant("ghp_WrongToken000000000000000000000000")]) {
      const runId = await push(tenant);
      expect(await freeze(runId)).toBe("invalid");
      const view = await getRun(t.db(), { orgId: tenant.orgId, runId });
      expect(view).toMatchObject({ outcome: "user_failure", cause: "source.auth_refused" });
      expect(view.cause_message).toMatch(/credential/);
      expect(JSON.stringify(view)).not.toContain("ghp_");
    }
  });
});

describe("the control plane's other fetches of a private repo", () => {
  it("a schedule's branch head and a manual trigger's ref check use the credential; without it they fail", async () => {
    const cred = async () => ({ username: "x-access-token", password: TOKEN });
    expect(await resolveBranchHead(server.sourcePolicy, repo.cloneUrl, "main", 30_000, cred)).toBe(repo.headSha);
    await expect(resolveBranchHead(server.sourcePolicy, repo.cloneUrl, "main")).rejects.toMatchObject({
      code: "REPO.SOURCE_UNAVAILABLE",
    });
    const source = { gitCacheDir: path.join(tmp, "ref-check"), policy: server.sourcePolicy, credential: cred };
    await checkCommitOnRef(source, { id: randomUUID(), cloneUrl: repo.cloneUrl }, "refs/heads/main", repo.headSha);
    const bare = { gitCacheDir: path.join(tmp, "ref-check"), policy: server.sourcePolicy };
    const err = await checkCommitOnRef(
      bare,
      { id: randomUUID(), cloneUrl: repo.cloneUrl },
      "refs/heads/main",
      repo.headSha,
    ).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: "REPO.SOURCE_UNAVAILABLE" });
    expect(String(err)).not.toContain(TOKEN);
  });
});
