import { randomUUID } from "node:crypto";
import { sign } from "@octokit/webhooks-methods";
import { startFakeForge, type FakeForge } from "@kiln/testkit";
import { classify, refAllowed } from "@kiln/domain";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { deliverRunStatuses } from "../../src/forge/deliver-statuses.ts";
import { setRepoForge } from "../../src/forge/repo-forge.ts";
import { addRepo } from "../../src/tenants/admin.ts";
import { getRun } from "../../src/runs/get-run.ts";
import { connectRepo } from "../../src/tenants/repo-admin.ts";
import { admitGithubWebhook } from "../../src/webhooks/admit-webhook.ts";
import { seedTenant, useTestDb } from "../support.ts";
import { appKeys, forgeCfg, prPayload, pushPayload } from "./support.ts";

// Issue 28, from the attacker's side against the fake forge: an org admin tries to bind their Kiln
// repo to another tenant's GitHub App installation (a case-variant name, a forged installation.id
// signed with their own repo secret), and a fork PR names its head branch like the default branch.
const t = useTestDb();
const APP_ID = 515151;
const APP_SECRET = "the-apps-own-webhook-secret";
const keys = appKeys();
let forge: FakeForge;
beforeAll(async () => {
  forge = await startFakeForge({ app: { id: APP_ID, publicKeyPem: keys.publicKeyPem } });
});
afterAll(async () => {
  await forge.stop();
});
const cfg = () =>
  forgeCfg(forge.url, { app: { id: APP_ID, privateKeyPem: keys.privateKeyPem, webhookSecret: APP_SECRET } });

const admit = async (secret: string, event: string, payload: unknown) => {
  const body = JSON.stringify(payload);
  return admitGithubWebhook(t.db(), {
    rawBody: Buffer.from(body),
    signature: await sign(secret, body),
    event,
    deliveryId: randomUUID(),
    forge: cfg(),
  });
};
const runsOf = (repoId: string) =>
  t.db().$queryRaw<{ id: string; ref: string | null; head_ref: string | null; trust_class: string }[]>`
    SELECT id, ref, head_ref, trust_class FROM workflow_run WHERE repo_id = ${repoId}::uuid`;

describe("binding another tenant's App installation", () => {
  it("a case-variant of a connected repo cannot be registered, by another org or the same one", async () => {
    const victim = await seedTenant(t.db());
    const attacker = await seedTenant(t.db());
    const variant = victim.repoName.toUpperCase();
    const add = (orgSlug: string) =>
      addRepo(t.db(), {
        orgSlug,
        name: variant,
        cloneUrl: "https://github.com/x/y.git",
        webhookSecret: "attacker-secret",
        workflowPath: ".kiln/workflow.yaml",
      });
    await expect(add(attacker.slug)).rejects.toMatchObject({ code: "REPO.NAME_TAKEN" });
    await expect(add(victim.slug)).rejects.toMatchObject({ code: "REPO.NAME_TAKEN" });
    const n = await t.db().$queryRaw<{ n: number }[]>`
      SELECT count(*)::int AS n FROM repo WHERE lower(full_name) = lower(${victim.repoName})`;
    expect(n[0]?.n).toBe(1);
    // The database refuses it too, whatever path inserts (migration 0026's index).
    await expect(
      t.db().$executeRaw`INSERT INTO repo (org_id, full_name, clone_url, webhook_secret, workflow_path)
        VALUES (${attacker.orgId}::uuid, ${variant}, 'https://x/y.git', 'attacker-secret', '.kiln/workflow.yaml')`,
    ).rejects.toThrow(/repo_full_name_lower_key/);
  });

  it("a webhook signed with the attacker's repo secret carrying the victim's installation.id is refused; nothing is posted on the victim's repo", async () => {
    const victimInstallation = 7_700_001;
    const victim = await seedTenant(t.db());
    forge.addRepo(victim.repoName, { installationId: victimInstallation });
    const attacker = await seedTenant(t.db(), { secret: "attacker-own-secret" });
    // The attacker's repo is the case-variant the issue describes wherever the forge is concerned.
    forge.addRepo(attacker.repoName, {});
    const sha = "e".repeat(40);
    const forged = { ...pushPayload(attacker.repoName, sha, 1), installation: { id: victimInstallation } };
    await expect(admit("attacker-own-secret", "push", forged)).rejects.toMatchObject({
      code: "WEBHOOK.INSTALLATION_UNVERIFIED",
    });
    expect(await runsOf(attacker.repoId)).toHaveLength(0);
    const bound = await t.db().$queryRaw<{ n: number }[]>`
      SELECT count(*)::int AS n FROM repo_forge WHERE repo_id = ${attacker.repoId}::uuid AND installation_id IS NOT NULL`;
    expect(bound[0]?.n).toBe(0);
    // Even signed with the App's secret (say it leaked), the App's API must confirm the installation
    // is the one on the named repository: it is not.
    await expect(admit(APP_SECRET, "push", forged)).rejects.toMatchObject({ code: "WEBHOOK.INSTALLATION_UNVERIFIED" });
    // Without the installation the attacker's run exists, but it has no credential on the forge.
    const plain = await admit("attacker-own-secret", "push", pushPayload(attacker.repoName, sha, 1));
    expect(plain.status).toBe(202);
    const report = await deliverRunStatuses(t.db(), cfg(), plain.runId ?? "");
    expect(report.kind === "wait" ? report.delivered : report.kind === "done" ? report.delivered : 0).toBe(0);
    expect(forge.latestStatuses(victim.repoName, sha).size).toBe(0);
    expect(forge.checkRuns(victim.repoName)).toHaveLength(0);
    expect(
      forge.requests.some((r) => r.method === "POST" && r.path.toLowerCase().includes(victim.repoName.toLowerCase())),
    ).toBe(false);
  });

  it("the forge's repository id is pinned on first sight; another id is refused on every later event", async () => {
    const tenant = await seedTenant(t.db());
    const first = pushPayload(tenant.repoName, "1".repeat(40), 1);
    first.repository.id = 424_242;
    expect((await admit("s3cret-value", "push", first)).status).toBe(202);
    const other = pushPayload(tenant.repoName, "2".repeat(40), 1);
    other.repository.id = 999_999;
    await expect(admit("s3cret-value", "push", other)).rejects.toMatchObject({ code: "WEBHOOK.REPOSITORY_MISMATCH" });
    expect(await runsOf(tenant.repoId)).toHaveLength(1);
  });

  it("storing a forge token proves control: a token the forge does not show the repo to, or shows it without push, is refused", async () => {
    const tenant = await seedTenant(t.db());
    await expect(
      setRepoForge(t.db(), cfg(), { repoId: tenant.repoId, token: "ghp_notforthisrepo123", actor: "cli:test" }),
    ).rejects.toMatchObject({ code: "REPO.FORGE_UNVERIFIED" });
    forge.addRepo(tenant.repoName, { token: "ghp_readonlytoken1234", tokenCanPush: false });
    await expect(
      setRepoForge(t.db(), cfg(), { repoId: tenant.repoId, token: "ghp_readonlytoken1234", actor: "cli:test" }),
    ).rejects.toMatchObject({ code: "REPO.FORGE_UNVERIFIED" });
    forge.addRepo(tenant.repoName, { token: "ghp_pushtoken123456", repositoryId: 31_337 });
    await setRepoForge(t.db(), cfg(), { repoId: tenant.repoId, token: "ghp_pushtoken123456", actor: "cli:test" });
    const pinned = await t.db().$queryRaw<{ id: bigint | null }[]>`
      SELECT forge_repository_id AS id FROM repo WHERE id = ${tenant.repoId}::uuid`;
    expect(Number(pinned[0]?.id)).toBe(31_337);
  });
});

describe("connecting a repo where the platform runs a GitHub App", () => {
  it("is refused unless the App's installation sees the repo; nothing is registered", async () => {
    const tenant = await seedTenant(t.db());
    const name = `${tenant.slug}/someone-elses`;
    const connect = () =>
      connectRepo(
        t.db(),
        { orgSlug: tenant.slug, name, cloneUrl: "https://github.com/x/y.git", actor: "web:ada" },
        { localReposRoot: null },
        cfg(),
      );
    await expect(connect()).rejects.toMatchObject({ code: "REPO.FORGE_UNVERIFIED" });
    const none = await t.db().$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM repo WHERE full_name = ${name}`;
    expect(none[0]?.n).toBe(0);
    forge.addRepo(name, { installationId: 7_700_099 });
    expect(await connect()).toMatchObject({ fullName: name, reconnected: false });
    // Seeing it is not binding it: the installation comes only from an App-signed delivery.
    const bound = await t.db().$queryRaw<{ n: number }[]>`
      SELECT count(*)::int AS n FROM repo_forge f JOIN repo r ON r.id = f.repo_id WHERE r.full_name = ${name}`;
    expect(bound[0]?.n).toBe(0);
  });
});

describe("a fork PR whose head branch is named like the default branch", () => {
  const forkPr = (repoName: string, number: number, headRef: string) => {
    const p = prPayload(repoName, "opened", number, "f".repeat(40), 4242);
    p.pull_request.head.ref = headRef;
    p.pull_request.head.repo = { ...(p.pull_request.head.repo ?? {}), full_name: "mallory/fork" };
    return p;
  };

  it("`main`: the run's ref is refs/pull/<n>/head, the branch kept apart; gates and retention do not see main", async () => {
    const tenant = await seedTenant(t.db());
    const r = await admit("s3cret-value", "pull_request", forkPr(tenant.repoName, 17, "main"));
    expect(r.status).toBe(202);
    const [run] = await runsOf(tenant.repoId);
    expect(run).toMatchObject({ ref: "refs/pull/17/head", head_ref: "main", trust_class: "untrusted" });
    // The API shows both.
    expect(await getRun(t.db(), { orgId: tenant.orgId, runId: r.runId ?? "" })).toMatchObject({
      ref: "refs/pull/17/head",
      head_ref: "main",
    });
    const ref = run?.ref ?? "";
    expect(refAllowed(ref, ["main"])).toBe(false);
    expect(refAllowed(ref, ["refs/heads/main"])).toBe(false);
    // A retry carries the ref and trigger "retry": still not the default branch.
    expect(classify({ trigger: "retry", ref, defaultBranch: "main", releasePatterns: ["main"] })).toBe("other");
  });

  it("`refs/heads/main` is refused with its code and admits nothing", async () => {
    const tenant = await seedTenant(t.db());
    await expect(
      admit("s3cret-value", "pull_request", forkPr(tenant.repoName, 18, "refs/heads/main")),
    ).rejects.toMatchObject({ code: "WEBHOOK.HEAD_REF_REFUSED" });
    expect(await runsOf(tenant.repoId)).toHaveLength(0);
  });
});
