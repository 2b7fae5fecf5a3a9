import { DomainError } from "@kiln/domain";
import { beforeAll, describe, expect, it } from "vitest";
import { addMember } from "../../tenants/index.ts";
import { getJobHeader } from "../jobs/get-job-header.ts";
import { getOrgOverview } from "../runs/get-org-overview.ts";
import { getRunPage } from "../runs/get-run-page.ts";
import { listRepos } from "../runs/list-repos.ts";
import { listRuns } from "../runs/list-runs.ts";
import { seedOrg, seedRuns, useViewDb, type Org } from "../testing/view-fixtures.ts";
import { findSignInUser } from "./find-sign-in-user.ts";
import { listMemberships } from "./list-memberships.ts";
import { resolveJobTenant } from "./resolve-job-tenant.ts";
import { OPERATOR_ROLES, resolveTenant } from "./resolve-tenant.ts";

const db = useViewDb();
let acme: Org;
let globex: Org;
let acmeRun: { id: string; jobId: string };

beforeAll(async () => {
  acme = await seedOrg(db(), "acme");
  globex = await seedOrg(db(), "globex");
  await seedRuns(db(), acme, 5, 2);
  await seedRuns(db(), globex, 3, 1);
  const r = await db().$queryRaw<{ id: string; job_id: string }[]>`
    SELECT r.id, j.id AS job_id FROM workflow_run r JOIN job_run j ON j.run_id = r.id WHERE r.org_id = ${acme.orgId}::uuid LIMIT 1`;
  acmeRun = { id: r[0]!.id, jobId: r[0]!.job_id };
});

const code = async (p: Promise<unknown>) =>
  p.then(
    () => "ok",
    (e: unknown) => (e instanceof DomainError ? e.code : String(e)),
  );

describe("resolveTenant: membership and role are read in the query", () => {
  it("resolves a member, refuses a non-member with the same message whether or not the org exists", async () => {
    const s = await resolveTenant(db(), { userId: acme.userId, login: acme.login, orgSlug: "acme", roles: ["member"] });
    expect(s).toMatchObject({ orgId: acme.orgId, role: "member", slug: "acme" });
    const other = resolveTenant(db(), {
      userId: globex.userId,
      login: globex.login,
      orgSlug: "acme",
      roles: ["admin", "member", "auditor"],
    });
    await expect(other).rejects.toThrow("you are not a member of an org named acme");
    const missing = resolveTenant(db(), {
      userId: globex.userId,
      login: globex.login,
      orgSlug: "nope",
      roles: ["admin", "member", "auditor"],
    });
    await expect(missing).rejects.toThrow("you are not a member of an org named nope");
  });

  it("refuses an auditor for operator actions, and sees a role change on the next call", async () => {
    const { userId } = await addMember(db(), { orgSlug: "acme", login: "acme-watcher", role: "auditor" });
    const refused = resolveTenant(db(), { userId, login: "acme-watcher", orgSlug: "acme", roles: OPERATOR_ROLES });
    await expect(refused).rejects.toThrow(/auditor.*cannot do this/);
    await addMember(db(), { orgSlug: "acme", login: "acme-watcher", role: "member" });
    await expect(
      resolveTenant(db(), { userId, login: "acme-watcher", orgSlug: "acme", roles: OPERATOR_ROLES }),
    ).resolves.toMatchObject({ role: "member" });
  });

  it("sign-in needs an existing user with a membership; the switcher lists only the user's orgs", async () => {
    expect(await findSignInUser(db(), { login: acme.login })).toMatchObject({ id: acme.userId });
    expect(await findSignInUser(db(), { login: "stranger" })).toBeNull();
    await db().$executeRaw`INSERT INTO app_user (login) VALUES ('orphan')`;
    expect(await findSignInUser(db(), { login: "orphan" })).toBeNull();
    expect(await listMemberships(db(), { userId: acme.userId })).toEqual([{ slug: "acme", role: "member" }]);
  });
});

describe("every view is scoped to the resolved org", () => {
  it("another org's run, job and lists are invisible", async () => {
    expect(await code(getRunPage(db(), globex.scope, { runId: acmeRun.id }))).toBe("RUN.NOT_FOUND");
    expect(await code(getJobHeader(db(), globex.scope, { runId: acmeRun.id, jobId: acmeRun.jobId }))).toBe(
      "JOB.NOT_FOUND",
    );
    const page = await listRuns(db(), globex.scope, { filters: {}, limit: 50 });
    expect(page.runs).toHaveLength(3);
    expect(page.runs.every((r) => r.repo_id === globex.repoId)).toBe(true);
    // Filtering by the other org's repo id finds nothing rather than its runs.
    expect((await listRuns(db(), globex.scope, { filters: { repoId: acme.repoId }, limit: 50 })).runs).toEqual([]);
    expect(await listRepos(db(), globex.scope)).toEqual([{ id: globex.repoId, full_name: "globex/app" }]);
    const overview = await getOrgOverview(db(), globex.scope);
    expect(overview.recent_runs.map((r) => r.repo_name)).toEqual(["globex/app", "globex/app", "globex/app"]);
    expect(overview.infra_failure.last_7_days.finished).toBe(3);
  });

  it("a job id resolves to its org only for that org's members (the log stream's session check)", async () => {
    expect(
      await resolveJobTenant(db(), { userId: acme.userId, login: acme.login, jobId: acmeRun.jobId }),
    ).toMatchObject({ orgId: acme.orgId, slug: "acme" });
    expect(
      await resolveJobTenant(db(), { userId: globex.userId, login: globex.login, jobId: acmeRun.jobId }),
    ).toBeNull();
  });

  it("the owner sees the same run with jobs, classes and steps", async () => {
    const page = await getRunPage(db(), acme.scope, { runId: acmeRun.id });
    expect(page.run.id).toBe(acmeRun.id);
    expect(page.run.jobs).toHaveLength(2);
    expect(page.repo_name).toBe("acme/app");
    expect(await getJobHeader(db(), acme.scope, { runId: acmeRun.id, jobId: acmeRun.jobId })).toMatchObject({
      id: acmeRun.jobId,
      repo_name: "acme/app",
    });
  });
});
