import { RUNNER_STATES } from "@kiln/domain";
import type { FleetHost, PoolShare } from "@kiln/engine";
import { z } from "zod";

// Wire schemas of the fleet view and interruptible capacity (issue 22, docs/adr/0035).

export const fleetHost = z.object({
  id: z.string(),
  name: z.string(),
  org: z.string().nullable(),
  pool: z.string(),
  interruptible: z.boolean(),
  labels: z.array(z.string()),
  isolation: z.string().nullable(),
  state: z.enum(RUNNER_STATES),
  quarantine_reason: z.string().nullable(),
  last_heartbeat_at: z.string().nullable(),
  agent_version: z.string().nullable(),
  slots: z.object({ in_use: z.number().int(), total: z.number().int().nullable() }),
  running_jobs: z.array(z.object({ job_id: z.string(), run_id: z.string(), name: z.string() })),
  warm_pool: z.object({ size: z.number().int(), hits: z.number().int(), misses: z.number().int() }).nullable(),
  stats_at: z.string().nullable(),
  platform_failures_last_hour: z.number().int(),
  reclaims_last_hour: z.number().int(),
  reclaim_requested_at: z.string().nullable(),
});
export const fleet = z.object({ hosts: z.array(fleetHost) });

export function fleetHostWire(h: FleetHost): z.infer<typeof fleetHost> {
  return {
    id: h.id,
    name: h.name,
    org: h.org,
    pool: h.pool,
    interruptible: h.interruptible,
    labels: h.labels,
    isolation: h.isolation,
    state: h.state,
    quarantine_reason: h.quarantineReason,
    last_heartbeat_at: h.lastHeartbeatAt,
    agent_version: h.agentVersion,
    slots: { in_use: h.slots.inUse, total: h.slots.total },
    running_jobs: h.runningJobs.map((j) => ({ job_id: j.jobId, run_id: j.runId, name: j.name })),
    warm_pool: h.warmPool,
    stats_at: h.statsAt,
    platform_failures_last_hour: h.platformFailuresLastHour,
    reclaims_last_hour: h.reclaimsLastHour,
    reclaim_requested_at: h.reclaimRequestedAt,
  };
}

export const poolShare = z.object({
  pool: z.string(),
  interruptible_pools: z.array(z.string()),
  eligible_minutes: z.number(),
  interruptible_minutes: z.number(),
  share: z.number().nullable(),
  target: z.number(),
  meets_target: z.boolean().nullable(),
  reclaims: z.number().int(),
});
export const shares = z.object({ window_hours: z.number().int(), pools: z.array(poolShare) });

export function poolShareWire(s: PoolShare): z.infer<typeof poolShare> {
  return {
    pool: s.pool,
    interruptible_pools: s.interruptiblePools,
    eligible_minutes: Math.round(s.eligibleMinutes * 100) / 100,
    interruptible_minutes: Math.round(s.interruptibleMinutes * 100) / 100,
    share: s.share,
    target: s.target,
    meets_target: s.meetsTarget,
    reclaims: s.reclaims,
  };
}

export const reclaimAnswer = z.object({
  runner_id: z.string(),
  name: z.string(),
  pool: z.string(),
  sessions: z.number().int(),
});
export const interruptibleBody = z
  .object({ interruptible: z.boolean(), serves: z.string().min(1).max(110).nullable().optional() })
  .strict();
export const interruptibleAnswer = z.object({
  pool: z.string(),
  interruptible: z.boolean(),
  serves: z.string().nullable(),
});
