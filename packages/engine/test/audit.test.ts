import { withTx } from "@kiln/db";
import { isDomainError } from "@kiln/domain";
import { describe, expect, it } from "vitest";
import { listAuditEvents, recordAuditEvent } from "../src/audit/index.ts";
import { allowEgressHost, removeEgressHost } from "../src/egress/index.ts";
import { setEntitlement } from "../src/tenants/entitlements.ts";
import { seedTenant, useTestDb } from "./support.ts";

// The audit trail on real PostgreSQL: written with the change's transaction, read per org in commit
// order, and refused by the database itself when anyone tries to rewrite it.
const t = useTestDb();

describe("audit trail", () => {
  it("commits with its transaction, and not at all when the transaction rolls back", async () => {
    const a = await seedTenant(t.db());
    await withTx(t.db(), "audit-test", (tx) =>
      recordAuditEvent(tx, { orgId: a.orgId, kind: "secret.set", actor: "cli:test", subject: "org:NPM_TOKEN" }),
    );
    await expect(
      withTx(t.db(), "audit-test-rollback", async (tx) => {
        await recordAuditEvent(tx, { orgId: a.orgId, kind: "secret.delete", actor: "cli:test" });
        throw new Error("the change failed");
      }),
    ).rejects.toThrow("the change failed");
    const rows = await listAuditEvents(t.db(), { orgSlug: a.slug });
    expect(rows.map((r) => r.kind)).toEqual(["secret.set"]);
    expect(rows[0]).toMatchObject({ actor: "cli:test", subject: "org:NPM_TOKEN", data: {} });
  });

  it("lists one org's events only, filtered by kind, namespace, time and cursor", async () => {
    const a = await seedTenant(t.db());
    const b = await seedTenant(t.db());
    await withTx(t.db(), "audit-seed", async (tx) => {
      await recordAuditEvent(tx, { orgId: a.orgId, kind: "secret.read", actor: "agent:1", data: { version: 2 } });
      await recordAuditEvent(tx, { orgId: a.orgId, kind: "id_token.minted", actor: "agent:1" });
      await recordAuditEvent(tx, { orgId: b.orgId, kind: "secret.read", actor: "agent:2" });
      await recordAuditEvent(tx, { orgId: a.orgId, kind: "secret.set", actor: "web:alice" });
    });
    const all = await listAuditEvents(t.db(), { orgSlug: a.slug });
    expect(all.map((r) => r.kind)).toEqual(["secret.read", "id_token.minted", "secret.set"]);
    expect(all.every((r) => r.actor !== "agent:2")).toBe(true);
    expect((await listAuditEvents(t.db(), { orgSlug: a.slug, kind: "secret.read" })).map((r) => r.data)).toEqual([
      { version: 2 },
    ]);
    expect((await listAuditEvents(t.db(), { orgSlug: a.slug, kind: "secret." })).length).toBe(2);
    const page = await listAuditEvents(t.db(), { orgSlug: a.slug, afterSeq: all[0]?.seq ?? "0", limit: 1 });
    expect(page.map((r) => r.kind)).toEqual(["id_token.minted"]);
    const future = new Date(Date.now() + 60_000);
    expect(await listAuditEvents(t.db(), { orgSlug: a.slug, since: future })).toEqual([]);
    // Another org's slug sees nothing of a's, and an unknown slug sees nothing at all.
    expect((await listAuditEvents(t.db(), { orgSlug: b.slug })).map((r) => r.actor)).toEqual(["agent:2"]);
    expect(await listAuditEvents(t.db(), { orgSlug: "no-such-org" })).toEqual([]);
  });

  it("is refused by the database on UPDATE, DELETE and TRUNCATE", async () => {
    const a = await seedTenant(t.db());
    await withTx(t.db(), "audit-seed", (tx) =>
      recordAuditEvent(tx, { orgId: a.orgId, kind: "token.created", actor: "cli:test" }),
    );
    for (const sql of [
      `UPDATE audit_event SET actor = 'someone-else' WHERE org_id = '${a.orgId}'`,
      `DELETE FROM audit_event WHERE org_id = '${a.orgId}'`,
      "TRUNCATE audit_event",
    ])
      await expect(t.db().$executeRawUnsafe(sql), sql).rejects.toThrow(/append-only/);
    expect((await listAuditEvents(t.db(), { orgSlug: a.slug }))[0]?.actor).toBe("cli:test");
  });

  it("refuses malformed kinds and bad cursors with named codes", async () => {
    const a = await seedTenant(t.db());
    const code = async (p: Promise<unknown>) =>
      p.then(() => null).catch((e: unknown) => (isDomainError(e) ? e.code : e));
    expect(
      await code(
        withTx(t.db(), "audit-bad", (tx) => recordAuditEvent(tx, { orgId: a.orgId, kind: "Secret", actor: "x" })),
      ),
    ).toMatchObject({ message: expect.stringContaining("not namespaced") });
    expect(await code(listAuditEvents(t.db(), { orgSlug: a.slug, afterSeq: "1; DROP TABLE org" }))).toBe(
      "REQUEST.INVALID",
    );
  });

  it("records egress and entitlement changes with their actor", async () => {
    const a = await seedTenant(t.db());
    await allowEgressHost(t.db(), { orgSlug: a.slug, pattern: "registry.npmjs.org", actor: "cli:ops" });
    await removeEgressHost(t.db(), { orgSlug: a.slug, pattern: "registry.npmjs.org", actor: "web:alice" });
    await setEntitlement(t.db(), { orgSlug: a.slug, pool: a.pool, slots: 3, weight: 2, actor: "cli:ops" });
    const rows = await listAuditEvents(t.db(), { orgSlug: a.slug });
    expect(rows.map((r) => [r.kind, r.actor, r.subject])).toEqual([
      ["egress.allow", "cli:ops", "registry.npmjs.org"],
      ["egress.remove", "web:alice", "registry.npmjs.org"],
      ["entitlement.changed", "cli:ops", a.pool],
    ]);
    expect(rows[2]?.data).toMatchObject({ before: null, after: { slots: 3, weight: 2, hard_cap: null } });
  });
});
