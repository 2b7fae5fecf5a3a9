import { randomUUID } from "node:crypto";
import { sign } from "@octokit/webhooks-methods";
import { startFakeForge, type FakeForge } from "@kiln/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cancelRun } from "../../src/runs/cancel-run.ts";
import { deliverRunStatuses } from "../../src/forge/deliver-statuses.ts";
import { reconcileForgeDeliveries } from "../../src/forge/reconcile-deliveries.ts";
import { getRepoForge, setRepoForge } from "../../src/forge/repo-forge.ts";
import { admitGithubWebhook } from "../../src/webhooks/admit-webhook.ts";
import { seedTenant, useTestDb, type Tenant } from "../support.ts";
import { appKeys, forgeCfg, pushPayload, startWebhookEndpoint } from "./support.ts";

const t = useTestDb();
const APP_ID = 424242;
const keys = appKeys();
let forge: FakeForge;
let endpoint: Awaited<ReturnType<typeof startWebhookEndpoint>>;

beforeAll(async () => {
  endpoint = await startWebhookEndpoint(t.db());
  forge = await startFakeForge({ app: { id: APP_ID, publicKeyPem: keys.publicKeyPem } });
});
afterAll(async () => {
  await forge.stop();
  await endpoint.stop();
});

// The App's own webhook secret: no tenant knows it (a repo's secret is "s3cret-value").
const APP_SECRET = "app-webhook-secret";
const appCfg = () =>
  forgeCfg(forge.url, { app: { id: APP_ID, privateKeyPem: keys.privateKeyPem, webhookSecret: APP_SECRET } });
const runsOf = (repoId: string) =>
  t.db().$queryRaw<{ id: string; status: string; outcome: string | null }[]>`
    SELECT id, status, outcome FROM workflow_run WHERE repo_id = ${repoId}::uuid ORDER BY created_at`;

async function until<T>(f: () => Promise<T>, ok: (v: T) => boolean, ms = 10_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (ok(v) || Date.now() > deadline) return v;
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe("as a GitHub App", () => {
  it("learns the installation from the webhook, trades a verified JWT for one cached token, writes statuses and check runs", async () => {
    const tenant = await seedTenant(t.db());
    const installationId = 9_000_001;
    forge.addRepo(tenant.repoName, { installationId });
    const sha = "c".repeat(40);
    const body = JSON.stringify({ ...pushPayload(tenant.repoName, sha, 1), installation: { id: installationId } });
    const r = await admitGithubWebhook(t.db(), {
      rawBody: Buffer.from(body),
      signature: await sign(APP_SECRET, body),
      event: "push",
      deliveryId: randomUUID(),
      forge: appCfg(),
    });
    expect(r.status).toBe(202);
    // Confirmed through the App's API before it was bound (issue 28).
    expect(forge.requests.some((q) => q.path === `/repos/${tenant.repoName}/installation` && q.status === 200)).toBe(
      true,
    );
    const view = await getRepoForge(t.db(), appCfg(), { orgId: tenant.orgId, repoId: tenant.repoId });
    expect(view).toMatchObject({ credential: "app", app_installation_id: installationId, token_stored: false });
    const issued = forge.installationTokensIssued();
    await deliverRunStatuses(t.db(), appCfg(), r.runId ?? "");
    const [check] = forge.checkRuns(tenant.repoName);
    expect(check).toMatchObject({
      name: "kiln/.kiln/workflow.yaml",
      head_sha: sha,
      status: "queued",
      external_id: r.runId,
    });
    expect(forge.latestStatuses(tenant.repoName, sha).get("kiln/.kiln/workflow.yaml")?.state).toBe("pending");

    await cancelRun(t.db(), { runId: r.runId ?? "", orgId: tenant.orgId, actor: "alice" });
    await deliverRunStatuses(t.db(), appCfg(), r.runId ?? "");
    expect(forge.checkRuns(tenant.repoName)).toHaveLength(1);
    expect(forge.checkRuns(tenant.repoName)[0]).toMatchObject({
      status: "completed",
      conclusion: "cancelled",
      updates: 1,
    });
    expect(forge.checkRuns(tenant.repoName)[0]?.output.summary).toContain("run.cancelled");
    expect(forge.latestStatuses(tenant.repoName, sha).get("kiln/.kiln/workflow.yaml")?.state).toBe("error");
    // One exchange for both deliveries: cached until shortly before expires_at.
    expect(forge.installationTokensIssued() - issued).toBe(1);
  });

  it("a JWT signed with another key gets no installation token (the fake verifies with jose)", async () => {
    const other = appKeys();
    const tenant = await seedTenant(t.db());
    forge.addRepo(tenant.repoName, { installationId: 9_000_002 });
    await t.db().$executeRaw`
      INSERT INTO repo_forge (repo_id, installation_id, installation_confirmed_at) VALUES (${tenant.repoId}::uuid, 9000002, now())`;
    const body = JSON.stringify(pushPayload(tenant.repoName, "d".repeat(40), 1));
    const r = await admitGithubWebhook(t.db(), {
      rawBody: Buffer.from(body),
      signature: await sign("s3cret-value", body),
      event: "push",
      deliveryId: randomUUID(),
    });
    const cfg = forgeCfg(forge.url, { app: { id: APP_ID, privateKeyPem: other.privateKeyPem } });
    await expect(deliverRunStatuses(t.db(), cfg, r.runId ?? "")).rejects.toMatchObject({
      kind: "unauthorised",
      status: 401,
    });
    expect(forge.latestStatuses(tenant.repoName, "d".repeat(40)).size).toBe(0);
  });
});

describe("missed deliveries", () => {
  async function connectedRepo(hook: boolean): Promise<Tenant & { hookId: number }> {
    const tenant = await seedTenant(t.db());
    const hookId = 500_000 + Math.floor(Math.random() * 100_000);
    forge.addRepo(tenant.repoName, {
      token: "ghp_reconciletoken1234",
      hook: { id: hookId, url: endpoint.url, secret: "s3cret-value" },
    });
    await setRepoForge(t.db(), forgeCfg(forge.url), {
      repoId: tenant.repoId,
      token: "ghp_reconciletoken1234",
      actor: "cli:test",
      ...(hook ? { hookId } : {}),
    });
    return { ...tenant, hookId };
  }

  it("a push the forge delivered while Kiln was down is redelivered and admitted as exactly one run", async () => {
    const tenant = await connectedRepo(true);
    endpoint.down = true;
    const missed = await forge.deliver(tenant.repoName, "push", pushPayload(tenant.repoName, "e".repeat(40), 1));
    endpoint.down = false;
    expect(missed.statusCode).toBe(503);
    expect(await runsOf(tenant.repoId)).toHaveLength(0);
    // A delivery that did arrive is not asked for again.
    await forge.deliver(tenant.repoName, "push", pushPayload(tenant.repoName, "f".repeat(40), 1));
    expect(await runsOf(tenant.repoId)).toHaveLength(1);

    const reports = await reconcileForgeDeliveries(t.db(), forgeCfg(forge.url), { pageSize: 1 });
    expect(reports.find((h) => h.hook === `repo:${tenant.repoId}`)).toMatchObject({
      examined: 2,
      redelivered: 1,
      error: null,
    });
    const runs = await until(
      () => runsOf(tenant.repoId),
      (r) => r.length === 2,
    );
    expect(runs).toHaveLength(2);
    // The fake records a delivery once Kiln answered it, a moment after the run was committed.
    const redelivered = await until(
      async () => forge.deliveries(tenant.repoName).filter((d) => d.redelivery),
      (l) => l.length > 0,
    );
    expect(redelivered).toEqual([expect.objectContaining({ guid: missed.guid, status_code: 202 })]);

    // The next pass looks again from below the delivery that was owed a run (the original, the
    // one that arrived, the redelivery): all processed now, nothing asked; the cursor moves past them.
    const again = await reconcileForgeDeliveries(t.db(), forgeCfg(forge.url), { pageSize: 1 });
    expect(again.find((h) => h.hook === `repo:${tenant.repoId}`)).toMatchObject({ examined: 3, redelivered: 0 });
    const third = await reconcileForgeDeliveries(t.db(), forgeCfg(forge.url));
    expect(third.find((h) => h.hook === `repo:${tenant.repoId}`)).toMatchObject({ examined: 0, redelivered: 0 });
    expect(await runsOf(tenant.repoId)).toHaveLength(2);
    const view = await getRepoForge(t.db(), forgeCfg(forge.url), { orgId: tenant.orgId, repoId: tenant.repoId });
    expect(view.reconciler).toMatchObject({ last_error: null, redeliveries_requested: 1 });
    expect(view.last_delivery?.delivery_id).toBe(missed.guid);
  });

  it("finds the hook by Kiln's webhook URL when no hook id is configured, and remembers it", async () => {
    const tenant = await connectedRepo(false);
    const cfg = forgeCfg(forge.url, { publicUrl: endpoint.url.replace("/v1/webhooks/github", "") });
    endpoint.down = true;
    await forge.deliver(tenant.repoName, "push", pushPayload(tenant.repoName, "1".repeat(40), 1));
    endpoint.down = false;
    await reconcileForgeDeliveries(t.db(), cfg);
    const stored = await t.db().$queryRaw<
      { hook_id: bigint }[]
    >`SELECT hook_id FROM repo_forge WHERE repo_id = ${tenant.repoId}::uuid`;
    expect(Number(stored[0]?.hook_id)).toBe(tenant.hookId);
    expect(
      await until(
        () => runsOf(tenant.repoId),
        (r) => r.length === 1,
      ),
    ).toHaveLength(1);
  });

  it("a delivery Kiln keeps refusing is asked for at most three times, and the pass records the forge's failure", async () => {
    const tenant = await connectedRepo(true);
    endpoint.down = true;
    await forge.deliver(tenant.repoName, "push", pushPayload(tenant.repoName, "2".repeat(40), 1));
    for (let i = 0; i < 5; i++) {
      await reconcileForgeDeliveries(t.db(), forgeCfg(forge.url));
      // As if the re-ask window passed.
      await t.db()
        .$executeRaw`UPDATE forge_redelivery SET last_requested_at = now() - interval '1 hour' WHERE hook_key = ${`repo:${tenant.repoId}`}`;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(forge.deliveries(tenant.repoName).filter((d) => d.redelivery)).toHaveLength(3);
    endpoint.down = false;
    forge.fail({ status: 500 });
    const failed = await reconcileForgeDeliveries(t.db(), forgeCfg(forge.url));
    forge.recover();
    expect(failed.find((h) => h.hook === `repo:${tenant.repoId}`)?.error).toMatch(/unavailable/);
  });
});

describe("the reconciler and rate limits", () => {
  it("a 403 rate limit on the deliveries list pauses the credential; the next pass does not call the forge", async () => {
    const tenant = await seedTenant(t.db());
    const hookId = 800_001;
    forge.addRepo(tenant.repoName, {
      token: "ghp_ratelimitedtoken01",
      hook: { id: hookId, url: endpoint.url, secret: "s3cret-value" },
    });
    await setRepoForge(t.db(), forgeCfg(forge.url), {
      repoId: tenant.repoId,
      token: "ghp_ratelimitedtoken01",
      hookId,
      actor: "cli:test",
    });
    forge.rateLimit({
      flavour: "primary",
      retryAfterS: 600,
      times: 1,
      pathIncludes: `/repos/${tenant.repoName}/hooks/`,
    });
    const first = await reconcileForgeDeliveries(t.db(), forgeCfg(forge.url));
    expect(first.find((h) => h.hook === `repo:${tenant.repoId}`)?.error).toMatch(/^rate_limited: /);
    const before = forge.requests.filter((r) => r.path.includes(`/repos/${tenant.repoName}/`)).length;
    const second = await reconcileForgeDeliveries(t.db(), forgeCfg(forge.url));
    expect(second.find((h) => h.hook === `repo:${tenant.repoId}`)?.error).toMatch(/^rate limited/);
    expect(forge.requests.filter((r) => r.path.includes(`/repos/${tenant.repoName}/`)).length).toBe(before);
  });
});

describe("missed deliveries of a GitHub App's hook", () => {
  it("lists GET /app/hook/deliveries with the App's JWT and redelivers what Kiln missed, once", async () => {
    // An App signs every delivery with its one webhook secret; its repos are registered with it.
    const app = await startFakeForge({
      app: { id: APP_ID, publicKeyPem: keys.publicKeyPem, hook: { url: endpoint.url, secret: APP_SECRET } },
    });
    try {
      const tenant = await seedTenant(t.db());
      app.addRepo(tenant.repoName, { installationId: 9_100_001 });
      const cfg = forgeCfg(app.url, {
        app: { id: APP_ID, privateKeyPem: keys.privateKeyPem, webhookSecret: APP_SECRET },
      });
      endpoint.forge = cfg;
      endpoint.down = true;
      const missed = await app.deliver(tenant.repoName, "push", pushPayload(tenant.repoName, "9".repeat(40), 1));
      endpoint.down = false;
      expect(missed.statusCode).toBe(503);
      const reports = await reconcileForgeDeliveries(t.db(), cfg);
      expect(reports.find((h) => h.hook === "app")).toMatchObject({ redelivered: 1, error: null });
      expect(
        await until(
          () => runsOf(tenant.repoId),
          (r) => r.length === 1,
        ),
      ).toHaveLength(1);
      // The redelivery carried installation.id: the repo now has the App as its credential.
      const stored = await t.db().$queryRaw<{ installation_id: bigint }[]>`
        SELECT installation_id FROM repo_forge WHERE repo_id = ${tenant.repoId}::uuid`;
      expect(Number(stored[0]?.installation_id)).toBe(9_100_001);
      await until(
        async () => app.deliveries(null).filter((d) => d.redelivery),
        (l) => l.length > 0,
      );
      const again = await reconcileForgeDeliveries(t.db(), cfg);
      expect(again.find((h) => h.hook === "app")).toMatchObject({ redelivered: 0 });
      expect(await runsOf(tenant.repoId)).toHaveLength(1);
      expect(
        app.requests
          .filter((r) => r.path.startsWith("/app/hook/deliveries"))
          .every((r) => r.authorization?.startsWith("Bearer ey")),
      ).toBe(true);
    } finally {
      endpoint.forge = undefined;
      await app.stop();
    }
  });
});
