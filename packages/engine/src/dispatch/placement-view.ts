import type { Db } from "@kiln/db";
import {
  placementWaitingReason,
  type HostFacts,
  type IsolationClass,
  type RunnerSize,
  type TrustClass,
  type WaitingReason,
} from "@kiln/domain";
import { poolPolicyFromRow } from "./pool-policy.ts";

// Why a READY job waits when no connected host may take it (issue 15): shown on the API and the run
// page instead of an endless "queued". Computed from the same rules the claim enforces.

/** A host counts as connected while its session was seen within this window (as the pool snapshot's capacity). */
const CONNECTED_WITHIN = "60 seconds";

/** Keyed by job id: the run's READY jobs that no connected host may take, each with why. Scoped to `orgId` when given. */
export async function placementReasonsForRun(
  db: Db,
  runId: string,
  orgId: string | null,
): Promise<Map<string, WaitingReason>> {
  const out = new Map<string, WaitingReason>();
  const jobs = await db.$queryRaw<
    {
      id: string;
      pool: string;
      org_id: string;
      trust_class: TrustClass;
      runner_labels: string[];
      runner_size: RunnerSize;
    }[]
  >`
    SELECT j.id, j.pool, r.org_id, r.trust_class, j.runner_labels, j.runner_size FROM job_run j JOIN workflow_run r ON r.id = j.run_id
    WHERE j.run_id = ${runId}::uuid AND j.status = 'ready' AND (${orgId}::uuid IS NULL OR r.org_id = ${orgId}::uuid)`;
  const run = jobs[0];
  if (!run) return out;
  const pools = [...new Set(jobs.map((j) => j.pool))];
  const policies = await db.$queryRaw<
    {
      name: string;
      min_isolation: IsolationClass;
      admits_untrusted: boolean;
      untrusted_on_process: boolean;
      owner_org_id: string | null;
      development: boolean;
    }[]
  >`SELECT name, min_isolation, admits_untrusted, untrusted_on_process, owner_org_id, development
    FROM pool WHERE name = ANY(${pools}::text[])`;
  const hosts = await db.$queryRaw<
    { pool: string; isolation: string | null; org_id: string | null; runner_labels: string[]; sizes: RunnerSize[] }[]
  >`
    SELECT s.pool, s.labels->>'isolation' AS isolation, t.org_id, s.runner_labels, s.sizes
    FROM agent_session s JOIN agent_token t ON t.id = s.agent_token_id
    WHERE s.pool = ANY(${pools}::text[]) AND t.revoked_at IS NULL
      AND s.last_seen_at > now() - ${CONNECTED_WITHIN}::interval`;
  for (const pool of pools) {
    const policy = poolPolicyFromRow(
      pool,
      policies.find((p) => p.name === pool),
    );
    const facts: HostFacts[] = hosts
      .filter((h) => h.pool === pool)
      .map((h) => ({
        isolation: h.isolation === "microvm" ? "microvm" : "process",
        orgId: h.org_id,
        labels: h.runner_labels,
        sizes: h.sizes,
      }));
    // Per job: jobs of one run share org and trust class but not their runs_on (issue 20).
    for (const j of jobs) {
      if (j.pool !== pool) continue;
      const reason = placementWaitingReason(policy, facts, {
        orgId: run.org_id,
        trustClass: run.trust_class,
        requires: { labels: j.runner_labels, size: j.runner_size },
      });
      // No host connected at all is the scheduler's "no_capacity", as before: only a refusal is news.
      if (!reason || reason.code === "no_connected_host") continue;
      out.set(j.id, reason);
    }
  }
  return out;
}
