// The hostile side of retention's boundaries (issue 21): another org cannot place, lift or list
// holds on this org's artifacts or see them in its plan; a member cannot hold at all; an org admin
// cannot lengthen a window, an auditor cannot change one; a shortened window applies to the next seal.
import { DEFAULT_RETENTION_WINDOWS as W, dayExpiresAt, retentionDay } from "@kiln/domain";
import { describe, expect, it } from "vitest";
import { addRetentionHold, listRetentionHolds, removeRetentionHold } from "../../src/retention/retention-holds.ts";
import { getOrgRetention, setOrgRetentionWindow, setReleasePatterns } from "../../src/retention/retention-settings.ts";
import { planRetentionPass } from "../../src/retention/run-retention.ts";
import { useS3 } from "../artifacts/support.ts";
import { seedTenant, useTestDb } from "../support.ts";
import { sealedArtifact, stamp } from "./support.ts";

const t = useTestDb();
const s3 = useS3();
const as = (orgId: string, role: "admin" | "member" | "auditor") => ({ orgId, role, actor: `token:${role}` });

describe("holds across orgs and roles", () => {
  it("refuses another org's holds as if the artifact did not exist, and members altogether", async () => {
    const victim = await seedTenant(t.db());
    const other = await seedTenant(t.db());
    const a = await sealedArtifact(t.db(), s3.store(), victim, "refs/heads/topic");
    await expect(
      addRetentionHold(t.db(), as(other.orgId, "admin"), { artifactId: a.genId, reason: "mine now" }),
    ).rejects.toMatchObject({ code: "ARTIFACT.NOT_FOUND" });
    await expect(
      addRetentionHold(t.db(), as(victim.orgId, "member"), { artifactId: a.genId, reason: "please" }),
    ).rejects.toMatchObject({ code: "AUTH.FORBIDDEN" });
    await expect(
      addRetentionHold(t.db(), as(victim.orgId, "auditor"), { artifactId: a.genId, reason: " " }),
    ).rejects.toMatchObject({ code: "REQUEST.INVALID" });

    const hold = await addRetentionHold(t.db(), as(victim.orgId, "auditor"), {
      artifactId: a.genId,
      reason: "audit 2026",
    });
    expect(hold).toMatchObject({ artifact_id: a.genId, org_id: victim.orgId, created_by: "token:auditor" });
    await expect(
      addRetentionHold(t.db(), as(victim.orgId, "admin"), { artifactId: a.genId, reason: "twice" }),
    ).rejects.toMatchObject({ code: "RETENTION.HOLD_EXISTS" });
    // The other org can neither lift it nor see it.
    await expect(removeRetentionHold(t.db(), as(other.orgId, "admin"), { artifactId: a.genId })).rejects.toMatchObject({
      code: "RETENTION.HOLD_NOT_FOUND",
    });
    expect(await listRetentionHolds(t.db(), as(other.orgId, "admin"))).toEqual([]);
    await expect(listRetentionHolds(t.db(), as(victim.orgId, "member"))).rejects.toMatchObject({
      code: "AUTH.FORBIDDEN",
    });
    expect((await listRetentionHolds(t.db(), as(victim.orgId, "auditor"))).map((h) => h.id)).toEqual([hold.id]);

    const removed = await removeRetentionHold(t.db(), as(victim.orgId, "admin"), { artifactId: a.genId });
    expect(removed).toMatchObject({ id: hold.id, removed_by: "token:admin" });
    expect(await listRetentionHolds(t.db(), as(victim.orgId, "admin"))).toEqual([]);
    expect(
      (await listRetentionHolds(t.db(), as(victim.orgId, "admin"), { includeRemoved: true })).map((h) => h.id),
    ).toEqual([hold.id]);
    const audit = await t.db().$queryRaw<{ kind: string; actor: string }[]>`
      SELECT kind, actor FROM audit_event WHERE org_id = ${victim.orgId}::uuid AND kind LIKE 'retention.hold%' ORDER BY seq`;
    expect(audit).toEqual([
      { kind: "retention.hold_added", actor: "token:auditor" },
      { kind: "retention.hold_removed", actor: "token:admin" },
    ]);
  });

  it("plans one org's evictions without another org's items", async () => {
    const a = await seedTenant(t.db());
    const b = await seedTenant(t.db());
    const mine = await sealedArtifact(t.db(), s3.store(), a, "refs/heads/topic");
    const theirs = await sealedArtifact(t.db(), s3.store(), b, "refs/heads/topic");
    const at = new Date((await stamp(t.db(), theirs.genId)).expiresAt.getTime() + 1000);
    const plan = await planRetentionPass(t.db(), { windows: W, orgId: a.orgId, at });
    expect(plan.evict.map((e) => e.id)).toContain(mine.genId);
    expect([...plan.evict, ...plan.kept].every((e) => e.org_id === a.orgId)).toBe(true);
  });
});

describe("org windows", () => {
  it("lets an admin shorten a window, never lengthen it, and applies it from the next seal", async () => {
    const tenant = await seedTenant(t.db());
    await expect(
      setOrgRetentionWindow(t.db(), as(tenant.orgId, "admin"), W, { kind: "artifact", cls: "other", days: 15 }),
    ).rejects.toMatchObject({ code: "RETENTION.WINDOW_LENGTHENED" });
    await expect(
      setOrgRetentionWindow(t.db(), as(tenant.orgId, "auditor"), W, { kind: "artifact", cls: "other", days: 3 }),
    ).rejects.toMatchObject({ code: "AUTH.FORBIDDEN" });
    await expect(
      setOrgRetentionWindow(t.db(), as(tenant.orgId, "admin"), W, { kind: "artifact", cls: "other", days: 0 }),
    ).rejects.toMatchObject({ code: "REQUEST.INVALID" });
    const view = await setOrgRetentionWindow(t.db(), as(tenant.orgId, "admin"), W, {
      kind: "artifact",
      cls: "other",
      days: 3,
    });
    expect(view.effective.artifact).toEqual({ release: 400, default_branch: 90, other: 3 });
    expect(view.overrides).toEqual({ artifact: { other: 3 } });
    const a = await sealedArtifact(t.db(), s3.store(), tenant, "refs/heads/topic");
    const s = await stamp(t.db(), a.genId);
    expect(s.expiresAt).toEqual(dayExpiresAt(retentionDay(s.createdAt), 3));
    // Another org's windows are untouched.
    const other = await seedTenant(t.db());
    expect((await getOrgRetention(t.db(), as(other.orgId, "auditor"), W)).effective.artifact.other).toBe(14);
    const cleared = await setOrgRetentionWindow(t.db(), as(tenant.orgId, "admin"), W, {
      kind: "artifact",
      cls: "other",
      days: null,
    });
    expect(cleared.overrides).toEqual({});
    const audit = await t.db().$queryRaw<{ kind: string }[]>`
      SELECT kind FROM audit_event WHERE org_id = ${tenant.orgId}::uuid AND kind LIKE 'retention.window%' ORDER BY seq`;
    expect(audit.map((e) => e.kind)).toEqual(["retention.window_set", "retention.window_cleared"]);
  });

  it("keeps release patterns to the caller's org and admins, and refuses malformed ones", async () => {
    const tenant = await seedTenant(t.db());
    const other = await seedTenant(t.db());
    await expect(
      setReleasePatterns(t.db(), as(other.orgId, "admin"), { repoId: tenant.repoId, patterns: ["**"] }),
    ).rejects.toMatchObject({ code: "REPO.NOT_FOUND" });
    await expect(
      setReleasePatterns(t.db(), as(tenant.orgId, "member"), { repoId: tenant.repoId, patterns: ["**"] }),
    ).rejects.toMatchObject({ code: "AUTH.FORBIDDEN" });
    await expect(
      setReleasePatterns(t.db(), as(tenant.orgId, "admin"), { repoId: tenant.repoId, patterns: ["a b"] }),
    ).rejects.toMatchObject({ code: "REQUEST.INVALID" });
    expect(
      await setReleasePatterns(t.db(), as(tenant.orgId, "admin"), { repoId: tenant.repoId, patterns: ["release/*"] }),
    ).toEqual({ repo_id: tenant.repoId, release_patterns: ["release/*"] });
  });
});
