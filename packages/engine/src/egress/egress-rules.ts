import { withTx, type Db, type Tx } from "@kiln/db";
import { DomainError, formatHostPattern, parseHostPattern, type EgressRuleAction } from "@kiln/domain";
import { recordAuditEvent } from "../audit/index.ts";

// The org's egress allow-list (admin operations: the `kiln egress` CLI today, an admin UI later).
// Every change writes an egress_rule_change row with the actor in the same transaction, like
// entitlement changes (tenants/entitlements.ts).

export interface EgressRuleRow {
  org: string;
  pattern: string;
  created_by: string;
  created_at: string;
}

export interface EgressRuleInput {
  orgSlug: string;
  /** Host pattern as typed; stored canonical (see @kiln/domain host-pattern.ts). */
  pattern: string;
  actor: string;
}

/** Adds an entry (idempotent: allowing an allowed pattern changes nothing and records nothing). */
export async function allowEgressHost(
  db: Db,
  input: EgressRuleInput,
): Promise<{ rule: EgressRuleRow; created: boolean }> {
  const pattern = formatHostPattern(parseHostPattern(input.pattern));
  return withTx(db, "allow-egress-host", async (tx) => {
    const orgId = await orgIdOf(tx, input.orgSlug);
    const inserted = await tx.$queryRaw<{ created_by: string; created_at: Date }[]>`
      INSERT INTO egress_rule (org_id, pattern, created_by) VALUES (${orgId}::uuid, ${pattern}, ${input.actor})
      ON CONFLICT (org_id, pattern) DO NOTHING RETURNING created_by, created_at`;
    if (inserted[0]) await recordChange(tx, orgId, pattern, "allow", input.actor);
    const row =
      inserted[0] ??
      (
        await tx.$queryRaw<{ created_by: string; created_at: Date }[]>`
      SELECT created_by, created_at FROM egress_rule WHERE org_id = ${orgId}::uuid AND pattern = ${pattern}`
      )[0];
    if (!row) throw new Error("egress rule vanished inside its own transaction");
    return {
      rule: { org: input.orgSlug, pattern, created_by: row.created_by, created_at: row.created_at.toISOString() },
      created: inserted.length > 0,
    };
  });
}

/** Removes an entry; removing one that is not there is EGRESS rule not found (REQUEST.INVALID). */
export async function removeEgressHost(db: Db, input: EgressRuleInput): Promise<void> {
  const pattern = formatHostPattern(parseHostPattern(input.pattern));
  await withTx(db, "remove-egress-host", async (tx) => {
    const orgId = await orgIdOf(tx, input.orgSlug);
    const n = await tx.$executeRaw`DELETE FROM egress_rule WHERE org_id = ${orgId}::uuid AND pattern = ${pattern}`;
    if (n === 0) throw new DomainError("REQUEST.INVALID", `${pattern} is not on ${input.orgSlug}'s egress allow-list`);
    await recordChange(tx, orgId, pattern, "remove", input.actor);
  });
}

export async function listEgressRules(db: Db, orgSlug: string): Promise<EgressRuleRow[]> {
  const orgId = await orgIdOf(db, orgSlug);
  const rows = await db.$queryRaw<{ pattern: string; created_by: string; created_at: Date }[]>`
    SELECT pattern, created_by, created_at FROM egress_rule WHERE org_id = ${orgId}::uuid ORDER BY pattern`;
  return rows.map((r) => ({
    org: orgSlug,
    pattern: r.pattern,
    created_by: r.created_by,
    created_at: r.created_at.toISOString(),
  }));
}

type Queryable = Pick<Db, "$queryRaw">;

async function orgIdOf(db: Queryable, slug: string): Promise<string> {
  const rows = await db.$queryRaw<{ id: string }[]>`SELECT id FROM org WHERE slug = ${slug}`;
  if (!rows[0]) throw new DomainError("REQUEST.INVALID", `no org named ${slug}`);
  return rows[0].id;
}

async function recordChange(
  tx: Tx,
  orgId: string,
  pattern: string,
  action: EgressRuleAction,
  actor: string,
): Promise<void> {
  await tx.$executeRaw`INSERT INTO egress_rule_change (org_id, pattern, action, actor) VALUES (${orgId}::uuid, ${pattern}, ${action}, ${actor})`;
  // The org's audit trail lists egress changes beside secrets and tokens (issue 16).
  await recordAuditEvent(tx, { orgId, kind: `egress.${action}`, actor, subject: pattern });
}
