import { Prisma, type DbOrTx } from "@kiln/db";
import { withinMinuteQuotaSql } from "../metering/index.ts";
import { dispatch } from "@kiln/domain";

// Loads one pool's dispatch state for the pure scheduler. The view is advisory: the claim
// transaction re-checks readiness, generation and the org's hard cap under locks.

export interface SnapshotOptions {
  /** Queued jobs loaded per org (candidate selection needs only each org's head). */
  perOrg?: number;
  /** Queue only jobs of trusted runs (the view of hosts that may not run untrusted work). */
  trustedOnly?: boolean;
  /** Queue only jobs whose runs_on labels and size a host with these serves (issue 20). */
  runner?: RunnerFilter;
  /** Queue only background jobs no reclaim hit: the view of interruptible hosts (issue 22). */
  backgroundOnly?: boolean;
}

export interface RunnerFilter {
  labels: readonly string[];
  sizes: readonly string[];
}

export async function loadPoolState(
  tx: DbOrTx,
  pool: string,
  opts: SnapshotOptions = {},
): Promise<{ state: dispatch.PoolState; caps: Map<string, number> }> {
  const perOrg = opts.perOrg ?? 1_000_000;
  const runnerFiltered = opts.runner !== undefined;
  const runnerLabels = [...(opts.runner?.labels ?? [])];
  const runnerSizes = [...(opts.runner?.sizes ?? [])];
  const [nowRow] = await tx.$queryRaw<{ now: Date }[]>`SELECT now() AS now`;
  const now = (nowRow?.now ?? new Date()).getTime();
  const queued = await tx.$queryRaw<
    {
      id: string;
      org_id: string;
      run_id: string;
      tier: dispatch.Tier;
      ready_at: Date | null;
      next_attempt_at: Date | null;
      progress: number;
    }[]
  >`
    WITH q AS (
      SELECT id, org_id, run_id, tier, ready_at, next_attempt_at FROM (
        SELECT j.id, j.org_id, j.run_id, j.tier, j.ready_at, j.next_attempt_at,
               row_number() OVER (PARTITION BY j.org_id ORDER BY
                 CASE j.tier WHEN 'interactive' THEN 0 WHEN 'scheduled' THEN 1 ELSE 2 END, j.ready_at, j.id) AS rn
        FROM job_run j WHERE j.status = 'ready' AND j.pool = ${pool}
          AND (NOT ${opts.trustedOnly ?? false}
               OR EXISTS (SELECT 1 FROM workflow_run r WHERE r.id = j.run_id AND r.trust_class = 'trusted'))
          AND (NOT ${runnerFiltered} OR (j.runner_labels <@ ${runnerLabels}::text[] AND j.runner_size = ANY(${runnerSizes}::text[])))
          AND (NOT ${opts.backgroundOnly ?? false} OR (j.tier = 'background' AND NOT j.interruptible_excluded))
          -- Jobs of an org out of minutes (ADR 0045) wait: neither ranked nor offered.
          AND ${withinMinuteQuotaSql(pool, Prisma.sql`j.org_id`)}
      ) w WHERE w.rn <= ${perOrg}
    ),
    -- Progress once per run (not once per queued job): a 256-job run was otherwise counted 256 times.
    p AS (
      SELECT s.run_id, count(*) FILTER (WHERE s.status = 'completed')::float8 / count(*) AS progress
      FROM job_run s WHERE s.run_id IN (SELECT DISTINCT run_id FROM q) GROUP BY s.run_id
    )
    SELECT q.id, q.org_id, q.run_id, q.tier, q.ready_at, q.next_attempt_at, COALESCE(p.progress, 0) AS progress
    FROM q LEFT JOIN p ON p.run_id = q.run_id`;
  const running = await tx.$queryRaw<
    { job_id: string; org_id: string; run_id: string; tier: dispatch.Tier; claimed_at: Date }[]
  >`
    SELECT a.job_id, a.org_id, a.run_id, j.tier, a.claimed_at FROM attempt a JOIN job_run j ON j.id = a.job_id
    WHERE a.status = 'running' AND a.pool = ${pool}`;
  const ents = await tx.$queryRaw<{ org_id: string; slots: number; weight: number; hard_cap: number | null }[]>`
    SELECT org_id, slots, weight, hard_cap FROM entitlement WHERE pool = ${pool}`;
  // Capacity: what the pool's live agents announced (seen within the last minute), the hosts of the
  // interruptible pools that serve this queue included (issue 22).
  const cap = await tx.$queryRaw<{ capacity: bigint | null }[]>`
    SELECT sum(capacity) AS capacity FROM agent_session
    WHERE (pool = ${pool} OR pool IN (SELECT name FROM pool WHERE serves = ${pool} AND interruptible))
      AND last_seen_at > now() - interval '60 seconds'`;
  // Statements see different snapshots under READ COMMITTED: a job claimed between the two reads
  // shows up in both; it is running.
  const runningIds = new Set(running.map((r) => r.job_id));
  const caps = new Map<string, number>();
  for (const e of ents) if (e.hard_cap !== null) caps.set(e.org_id, e.hard_cap);
  return {
    caps,
    state: {
      capacity: Math.max(Number(cap[0]?.capacity ?? 0n), running.length),
      now,
      entitlements: ents.map((e) => ({ orgId: e.org_id, slots: e.slots, weight: e.weight })),
      running: running.map((r) => ({
        jobId: r.job_id,
        orgId: r.org_id,
        runId: r.run_id,
        tier: r.tier,
        startedAt: r.claimed_at.getTime(),
      })),
      queued: queued
        .filter((q) => !runningIds.has(q.id))
        .map((q) => ({
          jobId: q.id,
          orgId: q.org_id,
          runId: q.run_id,
          tier: q.tier,
          enqueuedAt: (q.ready_at ?? new Date(now)).getTime(),
          runProgress: q.progress,
          notBefore: q.next_attempt_at ? q.next_attempt_at.getTime() : null,
          predecessorsDone: true,
        })),
    },
  };
}

/**
 * The order in which the scheduler would start the pool's queued jobs, as far as `max` picks:
 * what a claim tries, in turn. Picks are simulated as started so the fair share moves with them.
 */
export function rankCandidates(
  state: dispatch.PoolState,
  caps: Map<string, number>,
  policy: dispatch.DispatchPolicy,
  max: number,
): string[] {
  // The claiming agent has a free slot even if the snapshot says the pool is full (sessions'
  // announced capacity may lag): rank as if there is room for `max` more.
  const s = dispatch.PoolScheduler.fromState(
    { ...state, capacity: Math.max(state.capacity, state.running.length + max) },
    { policy, orgCaps: caps },
  );
  const order: string[] = [];
  for (let i = 0; i < max; i++) {
    const d = s.next(state.now);
    if (!d.pick) break;
    order.push(d.pick.jobId);
    s.start(d.pick.jobId, state.now);
  }
  return order;
}
