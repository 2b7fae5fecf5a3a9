import type { Db } from "@kiln/db";
import { dispatch, displayedRunnerState, isRunnerState, type RunnerState } from "@kiln/domain";

// The fleet view (issue 22, docs/adr/0035): every host an org admin's org owns (or, for a platform
// operator, every host), with what the control plane knows (state, heartbeat, running attempts,
// platform failures in the last hour, reclaims apart) and what its agent reported (version, warm pool,
// slots). One statement; the org scope is in its WHERE clause.

export interface FleetHost {
  id: string;
  name: string;
  org: string | null;
  pool: string;
  interruptible: boolean;
  labels: string[];
  isolation: string | null;
  state: RunnerState;
  quarantineReason: string | null;
  lastHeartbeatAt: string | null;
  agentVersion: string | null;
  slots: { inUse: number; total: number | null };
  runningJobs: { jobId: string; runId: string; name: string }[];
  /** Null until the agent reported (or for a process host that has no pool: zeros). */
  warmPool: { size: number; hits: number; misses: number } | null;
  statsAt: string | null;
  /** Platform failures attributed to the host in the last hour, reclaims and preemptions excluded. */
  platformFailuresLastHour: number;
  /** Attempts stopped because the cloud reclaimed the host (host.reclaimed), last hour. */
  reclaimsLastHour: number;
  reclaimRequestedAt: string | null;
}

interface Row {
  id: string;
  name: string;
  org: string | null;
  pool: string;
  interruptible: boolean | null;
  labels: string[];
  isolation: string | null;
  state: string;
  quarantine_reason: string | null;
  heartbeat: Date | null;
  agent_version: string | null;
  capacity: number | null;
  slots_in_use: number | null;
  running: { job_id: string; run_id: string; name: string }[];
  warm_pool_size: number | null;
  warm_hits: bigint | null;
  warm_misses: bigint | null;
  stats_at: Date | null;
  failures: number;
  reclaims: number;
  reclaim_requested_at: Date | null;
  ended: boolean;
  now: Date;
}

export async function listFleet(db: Db, input: { orgId: string | null; leaseTtlMs: number }): Promise<FleetHost[]> {
  const rows = await db.$queryRaw<Row[]>`
    SELECT r.id, r.name, o.slug AS org, r.pool, p.interruptible, r.labels, r.isolation, r.state, r.quarantine_reason,
           NULLIF(GREATEST(COALESCE(r.last_heartbeat_at, '-infinity'), COALESCE(s.last_seen_at, '-infinity')), '-infinity') AS heartbeat,
           COALESCE(s.agent_version, r.agent_version) AS agent_version, s.capacity, s.slots_in_use,
           COALESCE((SELECT jsonb_agg(jsonb_build_object('job_id', a.job_id, 'run_id', a.run_id, 'name', j.name) ORDER BY a.claimed_at)
                     FROM attempt a JOIN agent_session x ON x.id = a.session_id JOIN job_run j ON j.id = a.job_id
                     WHERE x.agent_token_id = r.agent_token_id AND a.status = 'running'), '[]'::jsonb) AS running,
           s.warm_pool_size, s.warm_hits, s.warm_misses, s.stats_at, s.reclaim_requested_at, s.ended_at IS NOT NULL AS ended,
           f.failures, f.reclaims, now() AS now
    FROM runner r
      LEFT JOIN org o ON o.id = r.org_id
      LEFT JOIN pool p ON p.name = r.pool
      LEFT JOIN LATERAL (SELECT * FROM agent_session x WHERE x.agent_token_id = r.agent_token_id
                         ORDER BY x.created_at DESC LIMIT 1) s ON true
      LEFT JOIN LATERAL (
        SELECT count(*) FILTER (WHERE a.cause IS DISTINCT FROM ${dispatch.RECLAIMED_CAUSE}
                                  AND a.cause IS DISTINCT FROM ${dispatch.PREEMPTED_CAUSE})::int AS failures,
               count(*) FILTER (WHERE a.cause = ${dispatch.RECLAIMED_CAUSE})::int AS reclaims
        FROM attempt a JOIN agent_session x ON x.id = a.session_id
        WHERE x.agent_token_id = r.agent_token_id AND a.outcome = 'platform_failure'
          AND a.finished_at > now() - interval '1 hour') f ON true
    WHERE ${input.orgId}::uuid IS NULL OR r.org_id = ${input.orgId}::uuid
    ORDER BY r.pool, r.name, r.id`;
  return rows.map((r) => toHost(r, input.leaseTtlMs));
}

function toHost(r: Row, leaseTtlMs: number): FleetHost {
  const stored: RunnerState = isRunnerState(r.state) ? r.state : "offline";
  // An ended session is an agent that left (reclaimed, revoked, stopped): offline unless an admin
  // state says more.
  const heartbeatMs = r.ended ? null : (r.heartbeat?.getTime() ?? null);
  const state = displayedRunnerState(stored, heartbeatMs, r.now.getTime(), leaseTtlMs);
  return {
    id: r.id,
    name: r.name,
    org: r.org,
    pool: r.pool,
    interruptible: r.interruptible === true,
    labels: r.labels,
    isolation: r.isolation,
    state,
    quarantineReason: state === "quarantined" ? r.quarantine_reason : null,
    lastHeartbeatAt: r.heartbeat?.toISOString() ?? null,
    agentVersion: r.agent_version,
    slots: { inUse: r.slots_in_use ?? r.running.length, total: r.capacity },
    runningJobs: r.running.map((j) => ({ jobId: j.job_id, runId: j.run_id, name: j.name })),
    warmPool:
      r.warm_pool_size === null
        ? null
        : { size: r.warm_pool_size, hits: Number(r.warm_hits ?? 0n), misses: Number(r.warm_misses ?? 0n) },
    statsAt: r.stats_at?.toISOString() ?? null,
    platformFailuresLastHour: r.failures,
    reclaimsLastHour: r.reclaims,
    reclaimRequestedAt: r.reclaim_requested_at?.toISOString() ?? null,
  };
}
