import { withTx, type Db } from "@kiln/db";
import { ATTEMPT_TRANSITIONS, decideLeaseExpiry, dispatch, JOB_TRANSITIONS, legalSources } from "@kiln/domain";
import type { EngineConfig } from "../config/index.ts";
import { enqueueOutbox, recordTransition } from "../shared/journal.ts";
import type { OutboxTopic } from "../shared/outbox-topics.ts";
import { advanceRun, finishRunIfDone, lockRun, retryBudgetOf } from "../runs/index.ts";
import { finishAttempt, finishJob, requeuePreempted, scheduleRetry } from "./complete-attempt.ts";
import { loadPoolState } from "../dispatch/index.ts";
import { lockAttempt } from "./load-attempt.ts";
import { settleDeploymentLocks } from "../deployments/index.ts";
import { settleQuotaNotices } from "../metering/index.ts";

// Guards from the transition tables: hints go to READY jobs, stop requests to running attempts.
const REDISPATCHABLE = legalSources(JOB_TRANSITIONS, "redispatched", "ready");
const PREEMPTIBLE = legalSources(ATTEMPT_TRANSITIONS, "preempt_requested", "running");

export interface ReconcileReport {
  fenced: number;
  redispatched: number;
  refrozen: number;
  runsFinished: number;
  preempted: number;
  /** Deployment locks released (issue 18): their deploy run finished and every attempt is dead. */
  locksReleased: number;
  /** Minute-quota warnings (80%, 100%) given late: a crossing two racing completions each missed. */
  quotaNotices: number;
}

/**
 * The sweeper. Liveness comes from here; correctness still comes from the guarded updates, so
 * running it twice, or concurrently on two workers, changes nothing (each item is re-checked under
 * its locks). It never marks a silent job successful.
 */
export async function reconcile(db: Db, cfg: EngineConfig, limit = 100): Promise<ReconcileReport> {
  const report: ReconcileReport = {
    fenced: 0,
    redispatched: 0,
    refrozen: 0,
    runsFinished: 0,
    preempted: 0,
    locksReleased: 0,
    quotaNotices: 0,
  };
  report.fenced = await fenceExpiredLeases(db, cfg, limit);
  report.redispatched = await redispatchStaleReady(db, cfg, limit);
  report.refrozen = await refreezePending(db, cfg, limit);
  report.runsFinished = await settleCancellingRuns(db, cfg, limit);
  if (cfg.dispatchPolicy === "fair") report.preempted = await preemptForOwners(db);
  // After the fence: a deploy attempt fenced in this pass has its kill bound recorded at once.
  report.locksReleased = await settleDeploymentLocks(db, cfg, limit);
  report.quotaNotices = await settleQuotaNotices(db, limit);
  return report;
}

/** Expired lease: fence the epoch (end the attempt) before any replacement can be claimed. */
async function fenceExpiredLeases(db: Db, cfg: EngineConfig, limit: number): Promise<number> {
  const expired = await db.$queryRaw<{ id: string; run_id: string }[]>`
    SELECT id, run_id FROM attempt WHERE status = 'running' AND lease_expires_at <= now() ORDER BY lease_expires_at LIMIT ${limit}`;
  let n = 0;
  for (const e of expired) {
    const done = await withTx(db, "fence-expired-lease", async (tx) => {
      const run = await lockRun(tx, e.run_id, "update");
      const a = await lockAttempt(tx, e.id);
      // Re-checked under the locks: a heartbeat or completion may have won in between.
      if (!run || !a || a.status !== "running" || a.leaseLive) return false;
      const decision = decideLeaseExpiry({
        runStatus: run.status,
        platformRetries: a.platformRetries,
        // A deploy run's budget is 0: lease expiry ends it as a platform failure, never a retry.
        retryBudget: retryBudgetOf(run, cfg.retryBudget),
      });
      // The agent's local watchdog destroys the sandbox when it cannot renew within the TTL, so
      // lease expiry is when the attempt is known to be stopped (003 Q7's kill bound).
      await tx.$executeRaw`UPDATE attempt SET stopped_at = lease_expires_at WHERE id = ${a.id}::uuid`;
      if (decision.kind === "cancelled") {
        await finishAttempt(tx, a, "cancelled", "run.cancelled", "lease expired while the run was cancelling");
        await finishJob(tx, run, a, "cancelled", "run.cancelled", null);
        await finishRunIfDone(tx, run, cfg.retention);
        return true;
      }
      if (a.preemptRequested) {
        await finishAttempt(
          tx,
          a,
          "platform_failure",
          dispatch.PREEMPTED_CAUSE,
          "preempted; its lease ran out while stopping",
        );
        await requeuePreempted(tx, a);
        return true;
      }
      const msg = "the host agent stopped renewing its lease; the attempt was fenced";
      await finishAttempt(tx, a, "platform_failure", "lease.expired", msg);
      if (decision.kind === "retry") {
        await scheduleRetry(tx, cfg, run, a);
      } else {
        await finishJob(tx, run, a, "platform_failure", "lease.expired", msg);
        await advanceRun(tx, run, cfg.retention);
      }
      return true;
    });
    if (done) n++;
  }
  return n;
}

/** A READY job whose dispatch hint went out long ago gets a fresh one (duplicates are harmless). */
async function redispatchStaleReady(db: Db, cfg: EngineConfig, limit: number): Promise<number> {
  return withTx(db, "redispatch-stale-ready", async (tx) => {
    const stale = await tx.$queryRaw<
      { id: string; run_id: string; org_id: string; pool: string; dispatch_generation: number }[]
    >`
      SELECT j.id, j.run_id, j.org_id, j.pool, j.dispatch_generation FROM job_run j
      WHERE j.status = 'ready' AND j.dispatched_at < now() - make_interval(secs => ${cfg.redispatchAfterMs / 1000})
        AND (j.next_attempt_at IS NULL OR j.next_attempt_at <= now())
      ORDER BY j.dispatched_at LIMIT ${limit} FOR UPDATE SKIP LOCKED`;
    for (const j of stale) {
      await tx.$executeRaw`UPDATE job_run SET dispatched_at = now() WHERE id = ${j.id}::uuid AND status = ANY(${REDISPATCHABLE}::text[])`;
      await enqueueOutbox(tx, "job.dispatch", {
        jobId: j.id,
        runId: j.run_id,
        orgId: j.org_id,
        pool: j.pool,
        generation: j.dispatch_generation,
      });
    }
    return stale.length;
  });
}

/** Accepted runs whose freeze request was lost get it again; the freeze itself is a guarded no-op twice. */
async function refreezePending(db: Db, cfg: EngineConfig, limit: number): Promise<number> {
  return withTx(db, "refreeze-pending", async (tx) => {
    const stale = await tx.$queryRaw<{ id: string; org_id: string }[]>`
      SELECT r.id, r.org_id FROM workflow_run r
      WHERE r.status = 'pending' AND r.created_at < now() - make_interval(secs => ${cfg.refreezeAfterMs / 1000})
        AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.topic = ${"run.freeze" satisfies OutboxTopic} AND o.dedupe_key = r.id::text
                        AND o.created_at > now() - make_interval(secs => ${cfg.refreezeAfterMs / 1000}))
      LIMIT ${limit}`;
    for (const r of stale) {
      await enqueueOutbox(tx, "run.freeze", { runId: r.id }, { dedupeKey: r.id });
      await recordTransition(tx, {
        orgId: r.org_id,
        runId: r.id,
        entity: "run",
        from: "pending",
        to: "pending",
        reason: "freeze_resent",
      });
    }
    return stale.length;
  });
}

/** Cancelling runs whose last attempt has since stopped. */
async function settleCancellingRuns(db: Db, cfg: EngineConfig, limit: number): Promise<number> {
  const runs = await db.$queryRaw<
    { id: string }[]
  >`SELECT id FROM workflow_run WHERE status = 'cancelling' LIMIT ${limit}`;
  let n = 0;
  for (const r of runs) {
    const finished = await withTx(db, "settle-cancelling", async (tx) => {
      const run = await lockRun(tx, r.id, "update");
      return run ? finishRunIfDone(tx, run, cfg.retention) : false;
    });
    if (finished) n++;
  }
  return n;
}

/**
 * Lent capacity comes back to its owner: when a pool is full and an org under its entitlement is
 * waiting, background work another org runs on borrowed slots is asked to stop (heartbeat answers
 * cancel_requested); it is re-queued with cause capacity.preempted, which is neither a retry nor
 * counted in the infrastructure-failure ratio. Running non-background jobs are never stopped.
 */
async function preemptForOwners(db: Db): Promise<number> {
  const pools = await db.$queryRaw<{ pool: string }[]>`SELECT DISTINCT pool FROM job_run WHERE status = 'ready'`;
  let n = 0;
  for (const { pool } of pools) {
    n += await withTx(db, "preempt-for-owners", async (tx) => {
      const { state, caps } = await loadPoolState(tx, pool, { perOrg: 16 });
      if (state.running.length < state.capacity || state.entitlements.length === 0) return 0;
      // Exclude attempts already asked to stop so one owner job does not preempt several times.
      const stopping = new Set(
        (
          await tx.$queryRaw<{ job_id: string }[]>`
        SELECT job_id FROM attempt WHERE pool = ${pool} AND status = 'running' AND preempt_requested`
        ).map((r) => r.job_id),
      );
      const decision = dispatch.chooseNext(
        { ...state, running: state.running.filter((r) => !stopping.has(r.jobId)) },
        { policy: "fair", orgCaps: caps },
      );
      if (stopping.size > 0 || decision.preempt.length === 0) return 0;
      const victims = decision.preempt.map((p) => p.jobId);
      const rows = await tx.$queryRaw<{ id: string; org_id: string; run_id: string; job_id: string }[]>`
        UPDATE attempt SET preempt_requested = true
        WHERE job_id = ANY(${victims}::uuid[]) AND status = ANY(${PREEMPTIBLE}::text[]) AND NOT preempt_requested
        RETURNING id, org_id, run_id, job_id`;
      for (const r of rows) {
        await recordTransition(tx, {
          orgId: r.org_id,
          runId: r.run_id,
          jobId: r.job_id,
          attemptId: r.id,
          entity: "attempt",
          from: "running",
          to: "running",
          reason: "preempt_requested",
          data: { for_pool: pool },
        });
      }
      return rows.length;
    });
  }
  return n;
}
