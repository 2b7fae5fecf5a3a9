import { dispatch } from "@kiln/domain";
import type { SqlPool } from "../shared/sql-pool.ts";

// Interruptible capacity at claim time (issue 22, docs/adr/0035). A pool flagged interruptible has
// no queue of its own: its hosts draw from the queue of the on-demand pool it `serves`, background
// tier only. Everything here is read per claim from the pool row; the claim transaction re-checks
// on the rows it locked.

export interface CapacityKind {
  interruptible: boolean;
  /** The pool whose queue this pool's hosts claim from: itself, or the pool it serves. */
  queuePool: string;
}

// Per process, for a second, like the pool policy cache: a flag flipped by an operator is seen by
// candidate selection within a second and by the locked re-check at once.
const cache = new Map<string, { at: number; kind: CapacityKind }>();

export async function cachedCapacityKind(sql: SqlPool, pool: string): Promise<CapacityKind> {
  const hit = cache.get(pool);
  if (hit && performance.now() - hit.at < 1_000) return hit.kind;
  const rows = await sql.query<{ interruptible: boolean; serves: string | null }>({
    name: "claim-capacity-kind",
    text: `SELECT interruptible, serves FROM pool WHERE name = $1`,
    values: [pool],
  });
  const row = rows.rows[0];
  const kind: CapacityKind =
    row?.interruptible && row.serves
      ? { interruptible: true, queuePool: row.serves }
      : { interruptible: false, queuePool: pool };
  if (cache.size >= 1_000) cache.clear();
  cache.set(pool, { at: performance.now(), kind });
  return kind;
}

/**
 * The locked re-check: why this session may not take this job, or null. An on-demand session takes
 * what it took before; an interruptible one only background work of the pool it serves that no
 * reclaim hit. A hostile or stale candidate (a hint naming a foreground job) ends here.
 */
export function interruptibleClaimRefusal(
  session: { interruptible: boolean | null; serves: string | null },
  job: { tier: dispatch.Tier; pool: string; interruptible_excluded: boolean },
): string | null {
  if (session.interruptible !== true) return null;
  if (session.serves === null || job.pool !== session.serves) return "interruptible_other_pool";
  const refusal = dispatch.interruptibleRefusal({ tier: job.tier, excluded: job.interruptible_excluded });
  return refusal ? `interruptible_${refusal}` : null;
}
