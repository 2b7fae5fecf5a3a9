import { createHmac } from "node:crypto";
import { isDomainError } from "@kiln/domain";
import { startFakeForge } from "@kiln/testkit";
import { describe, expect, it } from "vitest";
import { listAuditEvents } from "../src/audit/index.ts";
import { admitManualRun } from "../src/runs/admit-manual.ts";
import { rerunFailedJobs } from "../src/runs/rerun-failed.ts";
import { retryRun } from "../src/runs/retry-run.ts";
import { admitGithubWebhook } from "../src/webhooks/admit-webhook.ts";
import {
  addMember,
  changeMemberRole,
  connectRepo,
  createOrg,
  disconnectRepo,
  listMembers,
  listOrgRepos,
  removeMember,
} from "../src/tenants/index.ts";
import { setRepoForge } from "../src/forge/repo-forge.ts";
import { forgeCfg } from "./forge/support.ts";
import { LOCAL_SOURCE, seedTenant, useTestDb } from "./support.ts";

// The admin console's use cases (issue 19) on real PostgreSQL: the last-admin rule under
// concurrency, soft disconnect as every admission path sees it, one-time secrets, the audit trail.
const t = useTestDb();

async function codeOf(p: Promise<unknown>): Promise<string | null> {
  try {
    await p;
    return null;
  } catch (e) {
    return isDomainError(e) ? e.code : `not a domain error: ${String(e)}`;
  }
}

async function orgWithAdmins(...logins: string[]) {
  const slug = `console-${Math.random().toString(36).slice(2, 9)}`;
  await createOrg(t.db(), slug);
  const ids: Record<string, string> = {};
  for (const [i, login] of logins.entries()) {
    const r = await addMember(t.db(), {
      orgSlug: slug,
      login: `${slug}-${login}`,
      role: "admin",
      forgeId: 7_000_000 + Math.floor(Math.random() * 1_000_000) * 10 + i,
      actor: "cli:test",
    });
    ids[login] = r.userId;
  }
  return { slug, ids };
}

describe("members", () => {
  it("adds by forge id, changes roles and removes, all audited; never the last admin", async () => {
    const { slug, ids } = await orgWithAdmins("ada");
    const ada = { userId: ids.ada ?? "" };
    const m = await addMember(t.db(), {
      orgSlug: slug,
      login: `${slug}-max`,
      role: "member",
      forgeId: 6_100_001,
      actor: "web:ada",
    });
    expect(
      await codeOf(changeMemberRole(t.db(), { orgSlug: slug, member: ada, role: "member", actor: "web:ada" })),
    ).toBe("MEMBER.LAST_ADMIN");
    expect(await codeOf(removeMember(t.db(), { orgSlug: slug, member: ada, actor: "web:ada" }))).toBe(
      "MEMBER.LAST_ADMIN",
    );
    // The CLI's upsert path is held to the same rule.
    expect(
      await codeOf(addMember(t.db(), { orgSlug: slug, login: `${slug}-ada`, role: "auditor", actor: "cli:test" })),
    ).toBe("MEMBER.LAST_ADMIN");
    const promoted = await changeMemberRole(t.db(), {
      orgSlug: slug,
      member: { login: `${slug}-max` },
      role: "admin",
      actor: "web:ada",
    });
    expect(promoted).toMatchObject({ userId: m.userId, role: "admin", forgeId: 6_100_001 });
    await removeMember(t.db(), { orgSlug: slug, member: ada, actor: "web:max" });
    expect((await listMembers(t.db(), { orgSlug: slug })).map((x) => [x.login, x.role])).toEqual([
      [`${slug}-max`, "admin"],
    ]);
    const audit = await listAuditEvents(t.db(), { orgSlug: slug, kind: "member." });
    expect(audit.map((e) => [e.kind, e.actor, e.subject, e.data])).toEqual([
      ["member.added", "cli:test", `${slug}-ada`, { user_id: ids.ada, role: "admin" }],
      ["member.added", "web:ada", `${slug}-max`, { user_id: m.userId, role: "member" }],
      ["member.role_changed", "web:ada", `${slug}-max`, { user_id: m.userId, from: "member", to: "admin" }],
      ["member.removed", "web:max", `${slug}-ada`, { user_id: ids.ada, role: "admin" }],
    ]);
  });

  it("two admins demoting each other at once leave exactly one admin", async () => {
    for (let round = 0; round < 5; round++) {
      const { slug, ids } = await orgWithAdmins("a", "b");
      const results = await Promise.all(
        (["a", "b"] as const).map((who) =>
          codeOf(
            changeMemberRole(t.db(), {
              orgSlug: slug,
              member: { userId: ids[who] ?? "" },
              role: "member",
              actor: `web:${who}`,
            }),
          ),
        ),
      );
      expect(results.sort()).toEqual(["MEMBER.LAST_ADMIN", null].sort());
      expect((await listMembers(t.db(), { orgSlug: slug })).filter((x) => x.role === "admin")).toHaveLength(1);
    }
  });

  it("another org's member is not found through this org", async () => {
    const a = await orgWithAdmins("x");
    const b = await orgWithAdmins("y", "z");
    const target = { userId: b.ids.y ?? "" };
    expect(await codeOf(removeMember(t.db(), { orgSlug: a.slug, member: target, actor: "web:x" }))).toBe(
      "MEMBER.NOT_FOUND",
    );
    expect(
      await codeOf(changeMemberRole(t.db(), { orgSlug: a.slug, member: target, role: "auditor", actor: "web:x" })),
    ).toBe("MEMBER.NOT_FOUND");
    expect((await listMembers(t.db(), { orgSlug: b.slug })).map((m) => m.role)).toEqual(["admin", "admin"]);
  });
});

function signed(secret: string, body: unknown) {
  const raw = Buffer.from(JSON.stringify(body));
  return { rawBody: raw, signature: `sha256=${createHmac("sha256", secret).update(raw).digest("hex")}` };
}

describe("repositories", () => {
  it("connect answers a generated secret once; disconnect stops every admission path and keeps history; connect again reconnects", async () => {
    const ten = await seedTenant(t.db());
    const name = `${ten.slug}/svc`;
    const c = await connectRepo(
      t.db(),
      { orgSlug: ten.slug, name, cloneUrl: "file:///nonexistent", actor: "web:ada" },
      LOCAL_SOURCE,
    );
    expect(c.webhookSecret).toMatch(/^whsec_[A-Za-z0-9_-]{32}$/);
    expect(
      await codeOf(
        connectRepo(t.db(), { orgSlug: ten.slug, name, cloneUrl: "file:///x", actor: "web:ada" }, LOCAL_SOURCE),
      ),
    ).toBe("REPO.ALREADY_CONNECTED");
    const listed = await listOrgRepos(t.db(), { orgSlug: ten.slug });
    expect(JSON.stringify(listed)).not.toContain(c.webhookSecret);
    expect(listed.find((r) => r.fullName === name)).toMatchObject({
      disconnectedAt: null,
      lastDelivery: null,
      forgeCredential: { state: "none" },
    });

    const push = (after: string) => ({
      ref: "refs/heads/main",
      after,
      repository: { full_name: name },
      sender: { login: "x", id: 1 },
    });
    const first = await admitGithubWebhook(t.db(), {
      ...signed(c.webhookSecret, push("b".repeat(40))),
      event: "push",
      deliveryId: `d1-${name}`,
    });
    expect(first.status).toBe(202);

    const caller = { tokenId: ten.tokenId, orgId: ten.orgId, role: "member" as const, name: "token:t" };
    const d = await disconnectRepo(t.db(), { orgSlug: ten.slug, repo: { id: c.id }, actor: "web:ada" });
    expect(d.unfinishedRuns).toBe(1);
    const again = await disconnectRepo(t.db(), { orgSlug: ten.slug, repo: { fullName: name }, actor: "web:ada" });
    expect(again.disconnectedAt).toBe(d.disconnectedAt);

    const ignored = await admitGithubWebhook(t.db(), {
      ...signed(c.webhookSecret, push("c".repeat(40))),
      event: "push",
      deliveryId: `d2-${name}`,
    });
    expect(ignored).toMatchObject({ status: 200, runId: null, ignored: "repo is disconnected" });
    const manual = admitManualRun(t.db(), {
      caller,
      repoId: c.id,
      idempotencyKey: "k1",
      body: { workflow_path: ".kiln/workflow.yaml", commit_sha: "d".repeat(40), inputs: {} },
      source: { gitCacheDir: "/tmp/kiln-console-test-git", policy: LOCAL_SOURCE },
    });
    expect(await codeOf(manual)).toBe("REPO.DISCONNECTED");
    if (first.status !== 202) throw new Error("unreachable");
    await t.db()
      .$executeRaw`UPDATE workflow_run SET status = 'completed', outcome = 'success', finished_at = now() WHERE id = ${first.runId}::uuid`;
    expect(await codeOf(retryRun(t.db(), { caller, runId: first.runId }))).toBe("REPO.DISCONNECTED");
    expect(await codeOf(rerunFailedJobs(t.db(), { caller, runId: first.runId }))).toBe("REPO.DISCONNECTED");

    const row = (await listOrgRepos(t.db(), { orgSlug: ten.slug })).find((r) => r.fullName === name);
    expect(row?.disconnectedAt).toBe(d.disconnectedAt);
    expect(row?.lastDelivery).toMatchObject({
      deliveryId: `d2-${name}`,
      event: "push",
      outcome: "ignored",
      runId: null,
    });
    const history = await t.db().$queryRaw<
      { n: number }[]
    >`SELECT count(*)::int AS n FROM workflow_run WHERE repo_id = ${c.id}::uuid`;
    expect(history[0]?.n).toBe(1);

    const back = await connectRepo(
      t.db(),
      { orgSlug: ten.slug, name, cloneUrl: "file:///nonexistent", actor: "web:ada" },
      LOCAL_SOURCE,
    );
    expect(back).toMatchObject({ id: c.id, reconnected: true });
    expect(back.webhookSecret).not.toBe(c.webhookSecret);
    const audit = await listAuditEvents(t.db(), { orgSlug: ten.slug, kind: "repo." });
    expect(audit.filter((e) => e.subject === name).map((e) => e.kind)).toEqual([
      "repo.connected",
      "repo.disconnected",
      "repo.reconnected",
    ]);
    expect(JSON.stringify(audit)).not.toContain(c.webhookSecret);
  });

  it("another org cannot disconnect a repo, by id or by name", async () => {
    const a = await seedTenant(t.db());
    const b = await seedTenant(t.db());
    expect(await codeOf(disconnectRepo(t.db(), { orgSlug: a.slug, repo: { id: b.repoId }, actor: "web:x" }))).toBe(
      "REPO.NOT_FOUND",
    );
    expect(
      await codeOf(disconnectRepo(t.db(), { orgSlug: a.slug, repo: { fullName: b.repoName }, actor: "web:x" })),
    ).toBe("REPO.NOT_FOUND");
    expect((await listOrgRepos(t.db(), { orgSlug: b.slug }))[0]?.disconnectedAt).toBeNull();
  });
});

describe("the forge credential on the repositories list", () => {
  it("says token once one is stored, and none for a repo without one; the token itself never", async () => {
    const ten = await seedTenant(t.db());
    const other = `${ten.slug}/no-forge`;
    await connectRepo(
      t.db(),
      { orgSlug: ten.slug, name: other, cloneUrl: "file:///x", actor: "web:ada" },
      LOCAL_SOURCE,
    );
    // Storing a token proves it against the forge (issue 28): a fake forge that shows the repo to it.
    const forge = await startFakeForge();
    forge.addRepo(ten.repoName, { token: "ghp_forge-token-value" });
    try {
      await setRepoForge(t.db(), forgeCfg(forge.url), {
        repoId: ten.repoId,
        token: "ghp_forge-token-value",
        actor: "cli:test",
      });
    } finally {
      await forge.stop();
    }
    const listed = await listOrgRepos(t.db(), { orgSlug: ten.slug });
    expect(listed.find((r) => r.id === ten.repoId)?.forgeCredential).toEqual({
      state: "token",
      lastCheckedAt: null,
      problem: null,
    });
    expect(listed.find((r) => r.fullName === other)?.forgeCredential).toEqual({ state: "none" });
    expect(JSON.stringify(listed)).not.toContain("ghp_forge-token-value");
  });
});
