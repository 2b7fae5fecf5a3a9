import { Prisma, type Db } from "@kiln/db";
import type { EngineConfig } from "../config/index.ts";
import { CLAIMABLE, type HostRunner } from "./claim-types.ts";
import { takeCandidates } from "./dispatch-view.ts";
import { withinMinuteQuotaSql } from "../metering/index.ts";

/**
 * Which READY jobs to try, in order. Fair policy: the next picks of this process's ranking of the
 * pool (tiers, entitlements with lending, weighted share; see dispatch-view.ts); a dispatch hint
 * only says "there is work". FIFO policy (the benchmark's baseline): the hinted job first, then the
 * oldest READY jobs.
 */
export async function chooseCandidates(
  db: Db,
  cfg: EngineConfig,
  pool: string,
  org: string | null,
  offer: { jobId: string; generation: number } | null,
  trustedOnly: boolean,
  runner: HostRunner,
  /** An interruptible host: background-tier jobs a reclaim never hit, nothing else (ADR 0035). */
  backgroundOnly: boolean,
): Promise<{ id: string; run_id: string }[]> {
  // Runner selection (issue 20): only jobs whose labels this host has, of a size it serves. A job
  // no host here may take is never a candidate, so it cannot hold the head of this host's queue.
  const { labels, sizes } = runner;
  // A host bound to an org serves that org alone: the pool's shared ranking (across orgs) would
  // keep offering it other orgs' jobs. Within one org, tiers first, then the oldest.
  if (org !== null && !offer) {
    return db.$queryRaw<{ id: string; run_id: string }[]>`
      SELECT id, run_id FROM job_run
      WHERE status = ANY(${CLAIMABLE}::text[]) AND pool = ${pool} AND org_id = ${org}::uuid
        AND (next_attempt_at IS NULL OR next_attempt_at <= now())
        AND runner_labels <@ ${labels}::text[] AND runner_size = ANY(${sizes}::text[])
        AND (NOT ${trustedOnly} OR EXISTS (SELECT 1 FROM workflow_run r WHERE r.id = run_id AND r.trust_class = 'trusted'))
        AND (NOT ${backgroundOnly} OR (tier = 'background' AND NOT interruptible_excluded))
        AND ${withinMinuteQuotaSql(pool, Prisma.sql`org_id`)}
      ORDER BY CASE tier WHEN 'interactive' THEN 0 WHEN 'scheduled' THEN 1 ELSE 2 END, ready_at, id LIMIT 16`;
  }
  if (cfg.dispatchPolicy === "fair") {
    const picks = await takeCandidates(db, pool, "fair", cfg.dispatchViewMs, 1, trustedOnly, runner, backgroundOnly);
    return picks.map((p) => ({ id: p.jobId, run_id: p.runId }));
  }
  const hinted = offer
    ? await db.$queryRaw<
        { id: string; run_id: string }[]
      >`SELECT id, run_id FROM job_run WHERE id = ${offer.jobId}::uuid AND pool = ${pool}
          AND (${org}::uuid IS NULL OR org_id = ${org}::uuid)
          AND runner_labels <@ ${labels}::text[] AND runner_size = ANY(${sizes}::text[])
          AND (NOT ${backgroundOnly} OR (tier = 'background' AND NOT interruptible_excluded))
          AND ${withinMinuteQuotaSql(pool, Prisma.sql`org_id`)}`
    : [];
  const oldest = await db.$queryRaw<{ id: string; run_id: string }[]>`
    SELECT id, run_id FROM job_run
    WHERE status = ANY(${CLAIMABLE}::text[]) AND pool = ${pool} AND (${org}::uuid IS NULL OR org_id = ${org}::uuid)
      AND (next_attempt_at IS NULL OR next_attempt_at <= now())
      AND runner_labels <@ ${labels}::text[] AND runner_size = ANY(${sizes}::text[])
      AND (NOT ${trustedOnly} OR EXISTS (SELECT 1 FROM workflow_run r WHERE r.id = run_id AND r.trust_class = 'trusted'))
      AND (NOT ${backgroundOnly} OR (tier = 'background' AND NOT interruptible_excluded))
      AND ${withinMinuteQuotaSql(pool, Prisma.sql`org_id`)}
    ORDER BY ready_at, id LIMIT 16`;
  return [...hinted, ...oldest.filter((o) => o.id !== offer?.jobId)];
}
