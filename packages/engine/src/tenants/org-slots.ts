import type { Tx } from "@kiln/db";

/**
 * Makes an org's slot rows in a pool match its hard cap (ADR 0042), in the entitlement write's
 * transaction (which holds the entitlement row, so cap changes of one org and pool are serial).
 *
 * - Running attempts that hold no slot (claimed while the org had no cap) get one, numbered after
 *   the highest existing slot: they count against the new cap until they end, as the old counter
 *   counted them.
 * - Free slots exist for every number below the cap; free slots at or past it are removed. A held
 *   slot at or past a lowered cap stays until its attempt ends, and while any does the claim takes
 *   no slot at all, so the org never runs more than the cap once it is back under it.
 * - With no cap, free slots are removed: the claim takes none, and held ones free as attempts end.
 */
export async function resizeOrgSlots(tx: Tx, orgId: string, pool: string, cap: number | null): Promise<void> {
  // Serialise with completions freeing slots and claims taking them for this org and pool only.
  await tx.$queryRaw`
    SELECT slot FROM org_pool_slot WHERE org_id = ${orgId}::uuid AND pool = ${pool} ORDER BY slot FOR UPDATE`;
  if (cap !== null) {
    await tx.$executeRaw`
      INSERT INTO org_pool_slot (org_id, pool, slot, attempt_id)
      SELECT ${orgId}::uuid, ${pool},
             (SELECT COALESCE(max(slot) + 1, 0) FROM org_pool_slot WHERE org_id = ${orgId}::uuid AND pool = ${pool})
               + (row_number() OVER (ORDER BY a.id))::int - 1,
             a.id
      FROM attempt a
      WHERE a.org_id = ${orgId}::uuid AND a.pool = ${pool} AND a.status = 'running'
        AND NOT EXISTS (SELECT 1 FROM org_pool_slot s WHERE s.attempt_id = a.id)`;
    await tx.$executeRaw`
      INSERT INTO org_pool_slot (org_id, pool, slot)
      SELECT ${orgId}::uuid, ${pool}, g.n FROM generate_series(0, ${cap}::int - 1) AS g(n)
      ON CONFLICT DO NOTHING`;
  }
  await tx.$executeRaw`
    DELETE FROM org_pool_slot
    WHERE org_id = ${orgId}::uuid AND pool = ${pool} AND attempt_id IS NULL AND (${cap}::int IS NULL OR slot >= ${cap}::int)`;
}
