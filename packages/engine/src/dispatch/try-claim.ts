import { decideClaim, decidePlacement } from "@kiln/domain";
import type { EngineConfig } from "../config/index.ts";
import type { SqlClient } from "../shared/sql-pool.ts";
import { commitClaim } from "./claim-commit.ts";
import {
  hostFacts,
  sessionPolicy,
  type Claimed,
  type ClaimJobRow,
  type ClaimRequest,
  type ClaimRun,
  type SessionRow,
} from "./claim-types.ts";
import { interruptibleClaimRefusal } from "./interruptible-capacity.ts";

type Refused = { ok: false; reason: string };

/**
 * One candidate inside the claim transaction: lock its run and check placement, lock the job and
 * decide, then commit the attempt. Any refusal skips the candidate, like a lost race.
 */
export async function tryClaim(
  c: SqlClient,
  cfg: EngineConfig,
  session: SessionRow,
  candidate: { id: string; run_id: string },
  req: ClaimRequest,
): Promise<{ ok: true; claimed: Claimed } | { ok: false; reason: string }> {
  // Checked before any lock: a full session takes nothing, whatever the candidate's state.
  if (session.running >= session.capacity) return { ok: false, reason: "no_capacity" };
  const run = await lockRun(c, session, candidate.run_id);
  if (!run.ok) return run;
  const job = await lockJob(c, session, run.run, candidate.id, req);
  if (!job.ok) return job;
  return commitClaim(c, cfg, session, run.run, job.job, req);
}

async function lockRun(
  c: SqlClient,
  session: SessionRow,
  runId: string,
): Promise<{ ok: true; run: ClaimRun } | Refused> {
  const runs = await c.query<ClaimRun>({
    name: "claim-lock-run",
    text: `SELECT r.id, r.org_id, r.status, r.trust_class, r.commit_sha, rp.clone_url
           FROM workflow_run r JOIN repo rp ON rp.id = r.repo_id WHERE r.id = $1::uuid FOR SHARE OF r`,
    values: [runId],
  });
  const run = runs.rows[0];
  if (!run) return { ok: false, reason: "not_ready" };
  // Placement (ADR 0022), on the run row this transaction holds and the pool row it read: a host bound
  // to an org runs nothing else, untrusted work needs microVM isolation unless the pool says otherwise,
  // and a process host of a shared pool serves one org. A refusal skips the candidate, like a lost race.
  const placement = decidePlacement(sessionPolicy(session), hostFacts(session.isolation, session.token_org), {
    orgId: run.org_id,
    trustClass: run.trust_class,
  });
  if (!placement.ok) return { ok: false, reason: placement.refusal };
  return { ok: true, run };
}

async function lockJob(
  c: SqlClient,
  session: SessionRow,
  run: ClaimRun,
  jobId: string,
  req: ClaimRequest,
): Promise<{ ok: true; job: ClaimJobRow } | Refused> {
  const jobs = await c.query<ClaimJobRow>({
    name: "claim-lock-job-3",
    text: `SELECT j.id, j.status, j.dispatch_generation, j.current_epoch, j.next_attempt_at, j.ready_at, now() AS now, j.job_index, j.name,
             j.runner_labels, j.runner_size, j.tier, j.pool, j.interruptible_excluded,
             NOT EXISTS (SELECT 1 FROM job_run p WHERE p.run_id = j.run_id AND p.job_index = ANY(j.needs)
                         AND p.outcome IS DISTINCT FROM 'success') AS preds_ok,
             r.definition->'jobs'->j.job_index AS job_def, r.definition->'env' AS run_env
           FROM job_run j JOIN workflow_run r ON r.id = j.run_id WHERE j.id = $1::uuid FOR UPDATE OF j SKIP LOCKED`,
    values: [jobId],
  });
  const job = jobs.rows[0];
  if (!job) return { ok: false, reason: "locked" };
  // The job's runs_on, re-checked on the locked row against what this session advertised.
  const fit = decidePlacement(
    sessionPolicy(session),
    hostFacts(session.isolation, session.token_org, { labels: session.runner_labels, sizes: session.sizes }),
    { orgId: run.org_id, trustClass: run.trust_class, requires: { labels: job.runner_labels, size: job.runner_size } },
  );
  if (!fit.ok) return { ok: false, reason: fit.refusal };
  // Interruptible capacity (ADR 0035), on the locked job row and the pool row this transaction read:
  // whatever a candidate list or a hint offered, an interruptible host takes background work of the
  // pool it serves only, and never a job a reclaim already hit.
  const refusal = interruptibleClaimRefusal(session, job);
  if (refusal) return { ok: false, reason: refusal };
  const decision = decideClaim({
    runStatus: run.status,
    jobStatus: job.status,
    jobGeneration: job.dispatch_generation,
    offeredGeneration: req.offer ? req.offer.generation : null,
    predecessorsSucceeded: job.preds_ok,
    notBefore: job.next_attempt_at,
    now: job.now,
    // Counted under the session's row lock (taken by the claim's first update): no other claim of
    // this session can add to it meanwhile; a completion can only make it smaller (conservative).
    sessionRunning: session.running,
    sessionCapacity: session.capacity,
  });
  if (!decision.ok) return { ok: false, reason: decision.reason };
  return { ok: true, job };
}
