import { withTx, type Db, type Tx } from "@kiln/db";
import { DomainError } from "@kiln/domain";
import { recordAuditEvent } from "../audit/index.ts";
import { resizeOrgSlots } from "./org-slots.ts";

// Entitlements in shared pools are capacity other orgs depend on, so only platform operators set
// them: the CLI on the server (`kiln entitlement set`, the operator's own path) and users flagged
// platform_admin (the dashboard). An org admin sees its entitlement and may only lower its own
// hard cap. Every change is one entitlement_change row (actor, before, after) in the same
// transaction as the change (docs/scheduling.md).

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

/**
 * The platform operator's path (CLI on the server): sets an org's entitlement in a pool and records
 * who changed what, in one transaction. Callers acting for a signed-in user go through
 * setEntitlementAsPlatformAdmin or lowerOwnHardCap instead.
 */
export async function setEntitlement(db: Db, input: EntitlementInput): Promise<EntitlementRow> {
  checkEntitlementInput(input);
  return withTx(db, "set-entitlement", (tx) => writeEntitlement(tx, input));
}

/** A signed-in user's change: refused unless the user is a platform admin (checked in this transaction). */
export async function setEntitlementAsPlatformAdmin(
  db: Db,
  input: Omit<EntitlementInput, "actor"> & { userId: string; login: string },
): Promise<EntitlementRow> {
  checkEntitlementInput(input);
  return withTx(db, "set-entitlement-platform-admin", async (tx) => {
    const rows = await tx.$queryRaw<{ platform_admin: boolean }[]>`
      SELECT platform_admin FROM app_user WHERE id = ${input.userId}::uuid FOR SHARE`;
    if (rows[0]?.platform_admin !== true)
      throw new DomainError(
        "ENTITLEMENT.PLATFORM_ADMIN_REQUIRED",
        "entitlements in shared pools are set by platform operators; an org admin may only lower its hard cap",
      );
    return writeEntitlement(tx, { ...input, actor: `web:${input.login} (platform admin)` });
  });
}

/**
 * An org admin lowers its own org's hard cap in a pool (never raises it, never touches slots or
 * weight): giving up capacity harms no one else. No entitlement row means nothing to lower.
 */
export async function lowerOwnHardCap(
  db: Db,
  input: { orgSlug: string; pool: string; hardCap: number; actor: string },
): Promise<EntitlementRow> {
  if (!Number.isInteger(input.hardCap) || input.hardCap < 0)
    throw new DomainError("REQUEST.INVALID", "cap must be a non-negative integer");
  return withTx(db, "lower-hard-cap", async (tx) => {
    const orgId = await lockedOrgId(tx, input.orgSlug);
    const cur = await tx.$queryRaw<{ slots: number; weight: number; hard_cap: number | null }[]>`
      SELECT slots, weight, hard_cap FROM entitlement WHERE org_id = ${orgId}::uuid AND pool = ${input.pool} FOR UPDATE`;
    const row = cur[0];
    if (!row)
      throw new DomainError(
        "ENTITLEMENT.PLATFORM_ADMIN_REQUIRED",
        `${input.orgSlug} has no entitlement in pool ${input.pool}; platform operators set entitlements`,
      );
    if (row.hard_cap !== null && input.hardCap > row.hard_cap)
      throw new DomainError(
        "ENTITLEMENT.PLATFORM_ADMIN_REQUIRED",
        `the hard cap may only be lowered (it is ${row.hard_cap}); raising it is for platform operators`,
      );
    return writeEntitlement(tx, {
      orgSlug: input.orgSlug,
      pool: input.pool,
      slots: row.slots,
      weight: row.weight,
      hardCap: input.hardCap,
      actor: input.actor,
    });
  });
}

async function lockedOrgId(tx: Tx, slug: string): Promise<string> {
  const orgs = await tx.$queryRaw<{ id: string }[]>`SELECT id FROM org WHERE slug = ${slug}`;
  const orgId = orgs[0]?.id;
  if (!orgId) throw new DomainError("REQUEST.INVALID", `no org named ${slug}`);
  return orgId;
}

function checkEntitlementInput(input: Omit<EntitlementInput, "actor">): void {
  if (!Number.isInteger(input.slots) || input.slots < 0 || input.slots > 100_000)
    throw new DomainError("REQUEST.INVALID", "slots must be an integer 0..100000");
  if (!Number.isInteger(input.weight) || input.weight < 1 || input.weight > 1000)
    throw new DomainError("REQUEST.INVALID", "weight must be an integer 1..1000");
  const cap = input.hardCap ?? null;
  if (cap !== null && (!Number.isInteger(cap) || cap < 0))
    throw new DomainError("REQUEST.INVALID", "cap must be a non-negative integer");
  if (!/^[a-z0-9][a-z0-9-]{0,62}$/.test(input.pool))
    throw new DomainError("REQUEST.INVALID", "pool must be lowercase letters, digits and dashes");
}

/** Upsert plus its audit row; the caller's transaction, the caller's authority already checked. */
async function writeEntitlement(tx: Tx, input: EntitlementInput): Promise<EntitlementRow> {
  const cap = input.hardCap ?? null;
  const orgId = await lockedOrgId(tx, input.orgSlug);
  const before = await tx.$queryRaw<{ slots: number; weight: number; hard_cap: number | null }[]>`
    SELECT slots, weight, hard_cap FROM entitlement WHERE org_id = ${orgId}::uuid AND pool = ${input.pool} FOR UPDATE`;
  await tx.$executeRaw`
    INSERT INTO entitlement (org_id, pool, slots, weight, hard_cap, updated_at)
    VALUES (${orgId}::uuid, ${input.pool}, ${input.slots}, ${input.weight}, ${cap}, now())
    ON CONFLICT (org_id, pool) DO UPDATE SET slots = EXCLUDED.slots, weight = EXCLUDED.weight, hard_cap = EXCLUDED.hard_cap, updated_at = now()`;
  await resizeOrgSlots(tx, orgId, input.pool, cap);
  const after = { slots: input.slots, weight: input.weight, hard_cap: cap };
  await tx.$executeRaw`
    INSERT INTO entitlement_change (org_id, pool, actor, before, after)
    VALUES (${orgId}::uuid, ${input.pool}, ${input.actor}, ${before[0] ? JSON.stringify(before[0]) : null}::jsonb, ${JSON.stringify(after)}::jsonb)`;
  await recordAuditEvent(tx, {
    orgId,
    kind: "entitlement.changed",
    actor: input.actor,
    subject: input.pool,
    data: { before: before[0] ?? null, after },
  });
  const usage = await tx.$queryRaw<
    { running: number }[]
  >`SELECT running FROM org_pool_usage WHERE org_id = ${orgId}::uuid AND pool = ${input.pool}`;
  return { org: input.orgSlug, pool: input.pool, ...after, running: usage[0]?.running ?? 0 };
}

export async function listEntitlements(db: Db, orgSlug?: string): Promise<EntitlementRow[]> {
  return db.$queryRaw<EntitlementRow[]>`
    SELECT o.slug AS org, e.pool, e.slots, e.weight, e.hard_cap, COALESCE(u.running, 0)::int AS running
    FROM entitlement e JOIN org o ON o.id = e.org_id
    LEFT JOIN org_pool_usage u ON u.org_id = e.org_id AND u.pool = e.pool
    WHERE ${orgSlug ?? null}::text IS NULL OR o.slug = ${orgSlug ?? null}
    ORDER BY o.slug, e.pool`;
}
