// Deletion evidence (issue 21, docs/adr/0037): what the destroyer recorded for one org, newest
// first, with the platform day key that went with each data key. Read by the dashboard, the API
// and `kiln shred evidence`; tenant-scoped in the query.
import type { DbOrTx } from "@kiln/db";

export interface DestructionEvidence {
  key_id: string;
  day: string;
  kind: string;
  class: string;
  due_at: string;
  destroyed_at: string;
  /** The due day's platform key's own destruction, once recorded (null: not yet). */
  platform_key_destroyed_at: string | null;
  /** Objects that were sealed under the key (what a deletion covered). */
  objects: number;
}

export async function listDestructionEvidence(db: DbOrTx, orgId: string, limit = 100): Promise<DestructionEvidence[]> {
  const n = Math.min(Math.max(Math.trunc(limit), 1), 500);
  const rows = await db.$queryRaw<
    {
      key_id: string;
      day: Date;
      kind: string;
      class: string;
      due_at: Date;
      destroyed_at: Date;
      platform_at: Date | null;
      objects: bigint;
    }[]
  >`
    SELECT d.key_id, d.day, d.kind, d.class, d.due_at, d.destroyed_at,
           (SELECT p.destroyed_at FROM shred_destruction p
             WHERE p.key_kind = 'platform_key' AND p.key_id = to_char(d.due_at AT TIME ZONE 'UTC', 'YYYY-MM-DD')) AS platform_at,
           (SELECT count(*) FROM shred_object o WHERE o.key_id::text = d.key_id AND o.org_id = ${orgId}::uuid) AS objects
    FROM shred_destruction d
    WHERE d.key_kind = 'data_key' AND d.org_id = ${orgId}::uuid
    ORDER BY d.seq DESC LIMIT ${n}`;
  return rows.map((r) => ({
    key_id: r.key_id,
    day: r.day.toISOString().slice(0, 10),
    kind: r.kind,
    class: r.class,
    due_at: r.due_at.toISOString(),
    destroyed_at: r.destroyed_at.toISOString(),
    platform_key_destroyed_at: r.platform_at?.toISOString() ?? null,
    objects: Number(r.objects),
  }));
}
