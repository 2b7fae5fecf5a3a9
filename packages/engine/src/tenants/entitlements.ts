import { withTx, type Db } from "@kiln/db";
import { DomainError } from "@kiln/domain";

export interface EntitlementInput {
  orgSlug: string;
  pool: string;
  slots: number;
  weight: number;
  /** Hard concurrency cap (the org's quota) in this pool; null = no cap beyond the pool's size. */
  hardCap?: number | null;
  actor: string;
}

export interface EntitlementRow {
  org: string;
  pool: string;
  slots: number;
  weight: number;
  hard_cap: number | null;
  running: number;
}

/** Sets an org's entitlement in a pool and records who changed what, in one transaction. */
export async function setEntitlement(db: Db, input: EntitlementInput): Promise<EntitlementRow> {
  if (!Number.isInteger(input.slots) || input.slots < 0 || input.slots > 100_000)
    throw new DomainError("REQUEST.INVALID", "slots must be an integer 0..100000");
  if (!Number.isInteger(input.weight) || input.weight < 1 || input.weight > 1000)
    throw new DomainError("REQUEST.INVALID", "weight must be an integer 1..1000");
  const cap = input.hardCap ?? null;
  if (cap !== null && (!Number.isInteger(cap) || cap < 0))
    throw new DomainError("REQUEST.INVALID", "cap must be a non-negative integer");
  if (!/^[a-z0-9][a-z0-9-]{0,62}$/.test(input.pool))
    throw new DomainError("REQUEST.INVALID", "pool must be lowercase letters, digits and dashes");
  return withTx(db, "set-entitlement", async (tx) => {
    const orgs = await tx.$queryRaw<{ id: string }[]>`SELECT id FROM org WHERE slug = ${input.orgSlug}`;
    const orgId = orgs[0]?.id;
    if (!orgId) throw new DomainError("REQUEST.INVALID", `no org named ${input.orgSlug}`);
    const before = await tx.$queryRaw<{ slots: number; weight: number; hard_cap: number | null }[]>`
      SELECT slots, weight, hard_cap FROM entitlement WHERE org_id = ${orgId}::uuid AND pool = ${input.pool} FOR UPDATE`;
    await tx.$executeRaw`
      INSERT INTO entitlement (org_id, pool, slots, weight, hard_cap, updated_at)
      VALUES (${orgId}::uuid, ${input.pool}, ${input.slots}, ${input.weight}, ${cap}, now())
      ON CONFLICT (org_id, pool) DO UPDATE SET slots = EXCLUDED.slots, weight = EXCLUDED.weight, hard_cap = EXCLUDED.hard_cap, updated_at = now()`;
    const after = { slots: input.slots, weight: input.weight, hard_cap: cap };
    await tx.$executeRaw`
      INSERT INTO entitlement_change (org_id, pool, actor, before, after)
      VALUES (${orgId}::uuid, ${input.pool}, ${input.actor}, ${before[0] ? JSON.stringify(before[0]) : null}::jsonb, ${JSON.stringify(after)}::jsonb)`;
    const usage = await tx.$queryRaw<
      { running: number }[]
    >`SELECT running FROM org_pool_usage WHERE org_id = ${orgId}::uuid AND pool = ${input.pool}`;
    return { org: input.orgSlug, pool: input.pool, ...after, running: usage[0]?.running ?? 0 };
  });
}

export async function listEntitlements(db: Db, orgSlug?: string): Promise<EntitlementRow[]> {
  return db.$queryRaw<EntitlementRow[]>`
    SELECT o.slug AS org, e.pool, e.slots, e.weight, e.hard_cap, COALESCE(u.running, 0)::int AS running
    FROM entitlement e JOIN org o ON o.id = e.org_id
    LEFT JOIN org_pool_usage u ON u.org_id = e.org_id AND u.pool = e.pool
    WHERE ${orgSlug ?? null}::text IS NULL OR o.slug = ${orgSlug ?? null}
    ORDER BY o.slug, e.pool`;
}
