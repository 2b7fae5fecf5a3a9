import { randomUUID } from "node:crypto";
import { sign } from "@octokit/webhooks-methods";
import { EXAMPLE_REPOSITORY_ID, startFakeForge, type FakeForge } from "@kiln/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { claimJob } from "../../src/dispatch/claim-job.ts";
import { completeAttempt } from "../../src/attempts/complete-attempt.ts";
import { deliverRunStatuses } from "../../src/forge/deliver-statuses.ts";
import { computeDesiredStatuses, storeDesiredStatuses } from "../../src/forge/desired-statuses.ts";
import { ForgeApiError } from "../../src/forge/github-api.ts";
import { getRepoForge, setRepoForge } from "../../src/forge/repo-forge.ts";
import { admitGithubWebhook } from "../../src/webhooks/admit-webhook.ts";
import { def, newSession, seedFrozenRun, seedTenant, TEST_CFG, TWO_JOBS, useTestDb, type Tenant } from "../support.ts";
import { forgeCfg, pushPayload } from "./support.ts";

const t = useTestDb();
let forge: FakeForge;
const TOKEN = "ghp_16C7e42F292c6912E7710c838347Ae178B4a";

beforeAll(async () => {
  forge = await startFakeForge();
});
afterAll(async () => {
  await forge.stop();
});

async function connected(): Promise<Tenant> {
  const tenant = await seedTenant(t.db());
  // The forge must show the repo to the token before Kiln stores it (issue 28).
  forge.addRepo(tenant.repoName, { token: TOKEN });
  await setRepoForge(t.db(), forgeCfg(forge.url), { repoId: tenant.repoId, token: `${TOKEN}\n`, actor: "cli:test" });
  return tenant;
}

/** A frozen two-job run with its run events, as admission + freeze leave it. */
async function frozenRun(tenant: Tenant): Promise<string> {
  const runId = await seedFrozenRun(t.db(), tenant, def(TWO_JOBS));
  await t.db().$executeRaw`
    INSERT INTO transition_event (org_id, run_id, entity, from_state, to_state, reason)
    VALUES (${tenant.orgId}::uuid, ${runId}::uuid, 'run', NULL, 'pending', 'accepted'),
           (${tenant.orgId}::uuid, ${runId}::uuid, 'run', 'pending', 'running', 'frozen')`;
  return runId;
}

async function failFirstJob(tenant: Tenant): Promise<void> {
  const session = await newSession(t.db(), tenant);
  const r = await claimJob(t.db(), TEST_CFG, { sessionId: session, claimRequestId: randomUUID() });
  if (r.kind !== "claimed") throw new Error("nothing claimed");
  await completeAttempt(t.db(), TEST_CFG, {
    attemptId: r.ticket.attemptId,
    jobId: r.ticket.jobId,
    epoch: r.ticket.epoch,
    outcome: "user_failure",
    cause: "step.exit_nonzero",
    message: "step 1 (make) exited with 2",
    sandboxDestroyed: true,
  });
}

const sha = "a".repeat(40);
const posts = () => forge.requests.filter((r) => r.method === "POST" && r.path.includes("/statuses/"));

describe("statuses back to the forge", () => {
  it("a push's admission queues a pending status, sent with the repo's sealed token and a link to the run page", async () => {
    const tenant = await connected();
    const head = "b".repeat(40);
    const body = JSON.stringify(pushPayload(tenant.repoName, head, 1));
    const r = await admitGithubWebhook(t.db(), {
      rawBody: Buffer.from(body),
      signature: await sign("s3cret-value", body),
      event: "push",
      deliveryId: randomUUID(),
    });
    expect(r.status).toBe(202);
    const queued = await t.db().$queryRaw<{ n: number }[]>`
      SELECT count(*)::int AS n FROM outbox WHERE topic = 'forge.status' AND payload->>'runId' = ${r.runId}`;
    expect(queued[0]?.n).toBe(1);
    expect(await deliverRunStatuses(t.db(), forgeCfg(forge.url), r.runId ?? "")).toEqual({
      kind: "done",
      delivered: 1,
    });
    const got = forge.latestStatuses(tenant.repoName, head).get("kiln/.kiln/workflow.yaml");
    expect(got).toMatchObject({
      state: "pending",
      description: "Kiln: queued",
      target_url: `https://kiln.example.com/orgs/${tenant.slug}/runs/${r.runId}`,
    });
    expect(forge.requests.at(-1)?.authorization).toBe(`Bearer ${TOKEN}`);
    // At rest the token is ciphertext only.
    const stored = await t.db().$queryRaw<
      { token_enc: string }[]
    >`SELECT token_enc FROM repo_forge WHERE repo_id = ${tenant.repoId}::uuid`;
    expect(stored[0]?.token_enc).toMatch(/^v1\./);
    expect(stored[0]?.token_enc).not.toContain(TOKEN);
  });

  it("final states per context from the outcome; a second delivery sends nothing; an older state never overwrites a newer one", async () => {
    const tenant = await connected();
    const runId = await frozenRun(tenant);
    const cfg = forgeCfg(forge.url);
    await deliverRunStatuses(t.db(), cfg, runId);
    expect([...forge.latestStatuses(tenant.repoName, sha).values()].map((s) => [s.context, s.state]).sort()).toEqual([
      ["kiln/.kiln/workflow.yaml", "pending"],
      ["kiln/.kiln/workflow.yaml/compile", "pending"],
      ["kiln/.kiln/workflow.yaml/test", "pending"],
    ]);
    const stale = await computeDesiredStatuses(t.db(), cfg, runId);
    await failFirstJob(tenant);
    await deliverRunStatuses(t.db(), cfg, runId);
    const latest = forge.latestStatuses(tenant.repoName, sha);
    expect(latest.get("kiln/.kiln/workflow.yaml")).toMatchObject({
      state: "failure",
      description: "Kiln: failed in your code: step.exit_nonzero (compile: step 1 (make) exited with 2)",
    });
    expect(latest.get("kiln/.kiln/workflow.yaml/compile")?.state).toBe("failure");
    // The job that never ran because compile failed: cancelled -> error, naming why.
    expect(latest.get("kiln/.kiln/workflow.yaml/test")).toMatchObject({ state: "error" });
    expect(latest.get("kiln/.kiln/workflow.yaml/test")?.description).toMatch(/^Kiln: cancelled: /);

    const before = posts().length;
    expect(await deliverRunStatuses(t.db(), cfg, runId)).toEqual({ kind: "done", delivered: 0 });
    // A late computation of the pending state (a delivery that read the run before it finished).
    if (!stale) throw new Error("no stale computation");
    await storeDesiredStatuses(t.db(), stale.run, stale.statuses);
    expect(await deliverRunStatuses(t.db(), cfg, runId)).toEqual({ kind: "done", delivered: 0 });
    expect(posts().length).toBe(before);
    expect(forge.latestStatuses(tenant.repoName, sha).get("kiln/.kiln/workflow.yaml")?.state).toBe("failure");
  });

  it("two deliveries racing send each context once", async () => {
    const tenant = await connected();
    const runId = await frozenRun(tenant);
    const before = posts().length;
    const cfg = forgeCfg(forge.url);
    await Promise.all([
      deliverRunStatuses(t.db(), cfg, runId),
      deliverRunStatuses(t.db(), cfg, runId),
      deliverRunStatuses(t.db(), cfg, runId),
    ]);
    expect(posts().length - before).toBe(3);
  });

  it("a 429 with Retry-After pauses the credential: nothing is sent until then, and the statuses go out after", async () => {
    const tenant = await connected();
    const runId = await frozenRun(tenant);
    const cfg = forgeCfg(forge.url);
    forge.rateLimit({ flavour: "secondary", status: 429, retryAfterS: 30, times: 1 });
    const r = await deliverRunStatuses(t.db(), cfg, runId);
    expect(r.kind).toBe("wait");
    expect(r.kind === "wait" && r.retryAfterMs).toBe(30_000);
    const before = forge.requests.length;
    expect((await deliverRunStatuses(t.db(), cfg, runId)).kind).toBe("wait");
    expect(forge.requests.length).toBe(before);
    const rows = await t.db().$queryRaw<{ last_http_status: number | null; next_attempt_at: Date | null }[]>`
      SELECT last_http_status, next_attempt_at FROM forge_status WHERE run_id = ${runId}::uuid`;
    expect(rows.every((x) => x.next_attempt_at !== null && x.next_attempt_at.getTime() > Date.now() + 20_000)).toBe(
      true,
    );
    // The pause is over (as if 30 s passed).
    await t.db()
      .$executeRaw`UPDATE forge_rate_limit SET until = now() - interval '1 second' WHERE credential_key = ${`repo:${tenant.repoId}`}`;
    await t.db().$executeRaw`UPDATE forge_status SET next_attempt_at = NULL WHERE run_id = ${runId}::uuid`;
    expect(await deliverRunStatuses(t.db(), cfg, runId)).toEqual({ kind: "done", delivered: 3 });
  });

  it("a primary rate limit (403, x-ratelimit-remaining: 0) waits until x-ratelimit-reset", async () => {
    const tenant = await connected();
    const runId = await frozenRun(tenant);
    forge.rateLimit({ flavour: "primary", retryAfterS: 120, times: 1 });
    const r = await deliverRunStatuses(t.db(), forgeCfg(forge.url), runId);
    expect(r.kind === "wait" && r.retryAfterMs).toBeGreaterThan(100_000);
    expect(r.kind === "wait" && r.retryAfterMs).toBeLessThanOrEqual(121_000);
  });

  it("an outage throws (the job's backoff retries) and records the error; after it the statuses are delivered", async () => {
    const tenant = await connected();
    const runId = await frozenRun(tenant);
    const cfg = forgeCfg(forge.url);
    forge.fail({ status: 502 });
    await expect(deliverRunStatuses(t.db(), cfg, runId)).rejects.toBeInstanceOf(ForgeApiError);
    const rows = await t.db().$queryRaw<
      { last_http_status: number | null; last_error: string | null; attempts: number }[]
    >`
      SELECT last_http_status, last_error, attempts FROM forge_status WHERE run_id = ${runId}::uuid AND job_id IS NULL`;
    expect(rows[0]).toMatchObject({ last_http_status: 502, attempts: 1 });
    forge.recover();
    expect(await deliverRunStatuses(t.db(), cfg, runId)).toEqual({ kind: "done", delivered: 3 });
  });

  it("a repo without a forge credential queues no status at all", async () => {
    const tenant = await seedTenant(t.db());
    const runId = await frozenRun(tenant);
    await failFirstJob(tenant);
    const n = await t.db().$queryRaw<
      { n: number }[]
    >`SELECT count(*)::int AS n FROM outbox WHERE topic = 'forge.status' AND payload->>'runId' = ${runId}`;
    expect(n[0]?.n).toBe(0);
  });

  it("a token sealed for one repo does not open as another repo's", async () => {
    const a = await connected();
    const b = await connected();
    await t.db()
      .$executeRaw`UPDATE repo_forge SET token_enc = (SELECT token_enc FROM repo_forge WHERE repo_id = ${a.repoId}::uuid) WHERE repo_id = ${b.repoId}::uuid`;
    const runId = await frozenRun(b);
    const r = await deliverRunStatuses(t.db(), forgeCfg(forge.url), runId);
    expect(r).toEqual({ kind: "no_credential", reason: "stored secret failed authentication" });
  });

  it("another org cannot read a repo's forge state (as if the repo did not exist), and the view never holds the token", async () => {
    const mine = await connected();
    const other = await seedTenant(t.db());
    await expect(
      getRepoForge(t.db(), forgeCfg(forge.url), { orgId: other.orgId, repoId: mine.repoId }),
    ).rejects.toMatchObject({
      code: "REPO.NOT_FOUND",
    });
    const v = await getRepoForge(t.db(), forgeCfg(forge.url), { orgId: mine.orgId, repoId: mine.repoId });
    expect(v).toMatchObject({ credential: "token", token_stored: true, credential_problem: null });
    expect(JSON.stringify(v)).not.toContain(TOKEN);
    expect(JSON.stringify(v)).not.toContain("v1.");
    // The change is on the org's audit trail, without the token.
    const audit = await t.db().$queryRaw<{ kind: string; subject: string; data: unknown }[]>`
      SELECT kind, subject, data FROM audit_event WHERE org_id = ${mine.orgId}::uuid AND kind LIKE 'repo.forge%'`;
    // (Seeding the tenant connected its repo and created a token: those are on the trail too.)
    // The token was proven against the forge, which answered the repository id Kiln pinned (issue 28).
    expect(audit).toEqual([
      {
        kind: "repo.forge_settings_changed",
        subject: mine.repoName,
        data: { token: "stored", forge_repository_id: EXAMPLE_REPOSITORY_ID },
      },
    ]);
    expect(JSON.stringify(audit)).not.toContain(TOKEN);
  });
});
