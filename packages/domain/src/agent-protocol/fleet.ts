import { z } from "zod";

// ---- Fleet stats and reclaim notices (issue 22, docs/adr/0035). With the host credential:
//   POST /v1/agent/sessions/{session_id}/stats  sessionStatsRequest -> sessionStatsResponse
// Sent right after the session starts and then every KILN_AGENT_STATS_MS, so the fleet view shows
// what the agent knows (its version, warm pool, slots) even while it runs nothing. The answer carries
// an operator's reclaim notice: the agent then stops as on SIGUSR2 (cause host.reclaimed).
export const sessionStatsRequest = z
  .object({
    agent_version: z.string().min(1).max(100),
    /** Pre-booted sandboxes (microVM driver); a process host has none and reports zeros. */
    warm_pool: z
      .object({
        size: z.number().int().min(0).max(1024),
        hits: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER),
        misses: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER),
      })
      .strict(),
    slots: z.object({ in_use: z.number().int().min(0).max(1024), total: z.number().int().min(1).max(1024) }).strict(),
    /** The agent's last word (a reclaim or shutdown, its jobs reported): the session ends now. */
    ending: z.boolean().optional(),
  })
  .strict();
export const sessionStatsResponse = z.object({ recorded: z.boolean(), reclaim_requested: z.boolean() });
