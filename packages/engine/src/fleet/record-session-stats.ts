import type { Db } from "@kiln/db";
import { DomainError } from "@kiln/domain";

// Fleet stats (issue 22, docs/adr/0035): what an agent process reports about itself, stored on its
// session (one session per process, so counters reset with it), not only in the agent's log.

export interface SessionStats {
  agentVersion: string;
  warmPool: { size: number; hits: number; misses: number };
  slots: { inUse: number; total: number };
  /** The agent is leaving (reclaimed or shut down, its jobs reported): end the session. */
  ending?: boolean;
}

/**
 * One guarded update: the session must belong to the caller's (authenticated) credential and be
 * live. The answer carries the reclaim notice an operator left on the session, if any.
 */
export async function recordSessionStats(
  db: Db,
  input: { sessionId: string; agentTokenId: string; stats: SessionStats },
): Promise<{ reclaimRequested: boolean }> {
  const { stats } = input;
  const rows = await db.$queryRaw<{ reclaim_requested: boolean }[]>`
    UPDATE agent_session SET agent_version = ${stats.agentVersion}, warm_pool_size = ${stats.warmPool.size},
      warm_hits = ${stats.warmPool.hits}, warm_misses = ${stats.warmPool.misses},
      slots_in_use = ${Math.min(stats.slots.inUse, stats.slots.total)}, stats_at = now(), last_seen_at = now(),
      ended_at = CASE WHEN ${stats.ending === true} THEN now() ELSE NULL END
    WHERE id = ${input.sessionId}::uuid AND agent_token_id = ${input.agentTokenId}::uuid AND ended_at IS NULL
    RETURNING reclaim_requested_at IS NOT NULL AS reclaim_requested`;
  const row = rows[0];
  if (!row) throw new DomainError("SESSION.NOT_FOUND", "unknown or ended agent session; register again");
  return { reclaimRequested: row.reclaim_requested };
}
