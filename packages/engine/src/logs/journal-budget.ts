// The journal budget: acknowledged bytes not yet archived, summed over log_attempt (partial index
// on journal_bytes > 0). Read at most every BUDGET_CACHE_MS per process: the sum is a guard
// against running out of room, not an exact quota, so a few hundred ms of staleness is fine.
import { num, type SqlPool } from "../shared/sql-pool.ts";

const BUDGET_CACHE_MS = 250;
const cache = new WeakMap<SqlPool, { at: number; value: Promise<number> }>();

export function journalBytesInUse(pool: SqlPool): Promise<number> {
  const hit = cache.get(pool);
  if (hit && Date.now() - hit.at < BUDGET_CACHE_MS) return hit.value;
  const value = pool
    .query<{ used: string | null }>({
      name: "log-journal-used",
      text: "SELECT sum(journal_bytes) AS used FROM log_attempt WHERE journal_bytes > 0",
    })
    .then((r) => num(r.rows[0]?.used ?? 0));
  // A failed read must not stick: drop it so the next call asks again.
  value.catch(() => cache.delete(pool));
  cache.set(pool, { at: Date.now(), value });
  return value;
}
