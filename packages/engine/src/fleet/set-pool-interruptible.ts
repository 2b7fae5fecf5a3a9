import { withTx, type Db } from "@kiln/db";
import { DomainError } from "@kiln/domain";
import { recordAuditEvent } from "../audit/index.ts";

// The interruptible flag of a pool (issue 22, docs/adr/0035): `kiln pool set <pool> --interruptible
// --serves <on-demand pool>`. Its hosts then take background-tier work of the served pool's queue,
// nothing else; the claim enforces it on the rows it locks. The change is audited and written to
// pool_change beside the policy changes.

export interface SetInterruptibleInput {
  pool: string;
  interruptible: boolean;
  /** The on-demand pool whose background work it takes; required when interruptible. */
  serves?: string | null;
  actor: string;
  /** An org admin may flag only pools its org owns; null: a platform operator. Scoped in the query. */
  orgId: string | null;
}

export interface InterruptibleView {
  pool: string;
  interruptible: boolean;
  serves: string | null;
}

export async function setPoolInterruptible(db: Db, input: SetInterruptibleInput): Promise<InterruptibleView> {
  const serves = input.interruptible ? (input.serves ?? null) : null;
  if (input.interruptible && !serves)
    throw new DomainError(
      "POOL.INTERRUPTIBLE_REFUSED",
      "an interruptible pool must name the on-demand pool it serves (--serves)",
    );
  if (serves === input.pool) throw new DomainError("POOL.INTERRUPTIBLE_REFUSED", "a pool cannot serve its own queue");
  return withTx(db, "set-pool-interruptible", async (tx) => {
    const rows = await tx.$queryRaw<{ interruptible: boolean; serves: string | null; owner_org_id: string | null }[]>`
      SELECT interruptible, serves, owner_org_id FROM pool
      WHERE name = ${input.pool} AND (${input.orgId}::uuid IS NULL OR owner_org_id = ${input.orgId}::uuid) FOR UPDATE`;
    const before = rows[0];
    if (!before)
      throw new DomainError(
        "POOL.NOT_INTERRUPTIBLE",
        `no configured pool ${input.pool} you may change (kiln pool set ${input.pool} --isolation ... first)`,
      );
    if (serves) {
      // The served pool is on-demand capacity: an interruptible pool serving another would let a
      // reclaimed job land on interruptible capacity again.
      const target = await tx.$queryRaw<
        { interruptible: boolean }[]
      >`SELECT interruptible FROM pool WHERE name = ${serves}`;
      if (target[0]?.interruptible)
        throw new DomainError("POOL.INTERRUPTIBLE_REFUSED", `pool ${serves} is itself interruptible`);
      const served = await tx.$queryRaw<{ name: string }[]>`SELECT name FROM pool WHERE serves = ${input.pool} LIMIT 1`;
      if (served[0])
        throw new DomainError("POOL.INTERRUPTIBLE_REFUSED", `pool ${served[0].name} serves ${input.pool}'s queue`);
    }
    await tx.$executeRaw`
      UPDATE pool SET interruptible = ${input.interruptible}, serves = ${serves}, updated_by = ${input.actor}, updated_at = now()
      WHERE name = ${input.pool}`;
    const after = { interruptible: input.interruptible, serves };
    await tx.$executeRaw`
      INSERT INTO pool_change (pool, actor, before, after)
      VALUES (${input.pool}, ${input.actor}, ${JSON.stringify({ interruptible: before.interruptible, serves: before.serves })}::jsonb,
              ${JSON.stringify(after)}::jsonb)`;
    await recordAuditEvent(tx, {
      orgId: before.owner_org_id,
      kind: "pool.interruptible_changed",
      actor: input.actor,
      subject: input.pool,
      data: { before: { interruptible: before.interruptible, serves: before.serves }, after },
    });
    return { pool: input.pool, ...after };
  });
}
