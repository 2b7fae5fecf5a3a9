import { beforeAll, describe, expect, it } from "vitest";
import { allowEgressHost, removeEgressHost } from "../../egress/index.ts";
import { setEntitlement } from "../../tenants/index.ts";
import { seedOrg, seedRuns, useViewDb, type Org } from "../testing/view-fixtures.ts";
import { getOrgSettings } from "./get-org-settings.ts";

// The settings page's read model on real PostgreSQL: one org's rows only, live usage, and both
// audit tables merged newest first.
const db = useViewDb();
let acme: Org;
let globex: Org;

beforeAll(async () => {
  acme = await seedOrg(db(), "acme", "admin");
  globex = await seedOrg(db(), "globex", "admin");
  await setEntitlement(db(), { orgSlug: "globex", pool: "default", slots: 50, weight: 9, actor: "cli:g" });
  await allowEgressHost(db(), { orgSlug: "globex", pattern: "globex.example.com", actor: "cli:g" });
});

describe("getOrgSettings", () => {
  it("shows the org's entitlements with running counts, its allow-list and its changes, newest first", async () => {
    await setEntitlement(db(), { orgSlug: "acme", pool: "default", slots: 2, weight: 1, actor: "cli:a" });
    await allowEgressHost(db(), { orgSlug: "acme", pattern: "registry.npmjs.org", actor: "cli:a" });
    await setEntitlement(db(), { orgSlug: "acme", pool: "default", slots: 3, weight: 2, hardCap: 5, actor: "web:a" });
    await allowEgressHost(db(), { orgSlug: "acme", pattern: "*.github.com", actor: "web:a" });
    await removeEgressHost(db(), { orgSlug: "acme", pattern: "*.github.com", actor: "web:a" });
    // Two running attempts in the pool: the running count is derived from them (ADR 0042).
    await seedRuns(db(), acme, 1, 2);
    await db()
      .$executeRaw`UPDATE attempt SET status = 'running', outcome = NULL, finished_at = NULL WHERE org_id = ${acme.orgId}::uuid`;

    const s = await getOrgSettings(db(), acme.scope);
    expect(s.entitlements).toEqual([
      { pool: "default", slots: 3, weight: 2, hard_cap: 5, running: 2, updated_at: expect.any(String) },
    ]);
    expect(s.egress.map((e) => [e.pattern, e.created_by])).toEqual([["registry.npmjs.org", "cli:a"]]);
    expect(
      s.changes.map((c) =>
        c.kind === "egress"
          ? `${c.action} ${c.pattern}`
          : `${c.pool} ${JSON.stringify(c.before)}→${JSON.stringify(c.after)}`,
      ),
    ).toEqual([
      "remove *.github.com",
      "allow *.github.com",
      'default {"slots":2,"weight":1,"hard_cap":null}→{"slots":3,"weight":2,"hard_cap":5}',
      "allow registry.npmjs.org",
      'default null→{"slots":2,"weight":1,"hard_cap":null}',
    ]);
    expect(JSON.stringify(s)).not.toContain("globex");

    const recent = await getOrgSettings(db(), acme.scope, { changes: 2 });
    expect(recent.changes.map((c) => c.id)).toEqual(s.changes.slice(0, 2).map((c) => c.id));
    expect((await getOrgSettings(db(), globex.scope)).entitlements.map((e) => e.slots)).toEqual([50]);
  });
});
