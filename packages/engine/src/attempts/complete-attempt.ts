import { invalidateDispatchViews } from "../dispatch/index.ts";
import { randomInt } from "node:crypto";
import { withTx, type Db, type Tx } from "@kiln/db";
import {
  ATTEMPT_TRANSITIONS,
  dispatch,
  backoffDelayMs,
  decideCompletion,
  DomainError,
  FAIL_FAST_CAUSE,
  JOB_TRANSITIONS,
  legalSources,
  type Outcome,
  type RunStatus,
  type WorkflowDefinition,
} from "@kiln/domain";
import type { EngineConfig } from "../config/index.ts";
import { enqueueOutbox, recordTransition } from "../shared/journal.ts";
import { advanceRun, finishRunIfDone, lockRun, makeJobsReady, retryBudgetOf } from "../runs/index.ts";
import { lockAttempt, runIdOfAttempt, type AttemptView } from "./load-attempt.ts";
import { quarantineHostIfUnhealthy } from "../runners/index.ts";
import { endUnsealedLog } from "../logs/index.ts";
import { reclaimHonoured, requeueReclaimed } from "./reclaim.ts";
import { recordUsage } from "../metering/index.ts";

// Guards from the transition tables: an attempt ends once, its job completes from running only.
const ATTEMPT_ENDS_FROM = legalSources(ATTEMPT_TRANSITIONS, "ended", "completed");
const JOB_FINISHES_FROM = legalSources(JOB_TRANSITIONS, "attempt_finished", "completed");

export interface CompletionReport {
  attemptId: string;
  jobId: string;
  epoch: number;
  outcome: Outcome;
  cause?: string | null;
  message?: string | null;
  exitCode?: number | null;
  /** The agent's word that the sandbox is destroyed; required before anything is published. */
  sandboxDestroyed: boolean;
  phases?: { imageMs?: number; dispatchMs?: number; executionMs?: number; finalizeMs?: number };
}

export type CompletionResult =
  | { accepted: true; jobOutcome: Outcome | "retry_scheduled" }
  | { accepted: false; reason: "run_cancelled" };

/**
 * The completion transaction, step for step as seed 000 section 9: lock the run then the job;
 * require an active run, the current epoch and a live lease; require every declared artifact SEALED
 * for this attempt; bind them; mark the job; make successors READY with outbox rows or finish the
 * run. Whichever of cancel and completion commits first wins.
 */
export async function completeAttempt(db: Db, cfg: EngineConfig, rep: CompletionReport): Promise<CompletionResult> {
  if (!rep.sandboxDestroyed && rep.outcome === "success") {
    throw new DomainError("REQUEST.INVALID", "success must be reported after the sandbox is destroyed");
  }
  const result = await completeInTx(db, cfg, rep);
  // A slot freed and successors may be READY: this process's next claim re-ranks the pool.
  if (result.accepted) invalidateDispatchViews(db);
  return result;
}

function completeInTx(db: Db, cfg: EngineConfig, rep: CompletionReport): Promise<CompletionResult> {
  return withTx(db, "complete-attempt", async (tx) => {
    const runId = await runIdOfAttempt(tx, rep.attemptId);
    if (!runId) throw new DomainError("ATTEMPT.NOT_FOUND", "unknown attempt");
    const run = await lockRun(tx, runId, "update");
    const a = await lockAttempt(tx, rep.attemptId);
    if (!run || !a || a.jobId !== rep.jobId) throw new DomainError("ATTEMPT.NOT_FOUND", "unknown attempt");

    const { required, sealed } = await artifactState(tx, a);
    const decision = decideCompletion({
      run: { status: run.status, cancelVersion: run.cancelVersion },
      job: { status: a.jobStatus, currentEpoch: a.jobCurrentEpoch, platformRetries: a.platformRetries },
      attempt: { epoch: a.epoch, status: a.status, leaseLive: a.leaseLive, preemptRequested: a.preemptRequested },
      reportedEpoch: rep.epoch,
      reportedOutcome: rep.outcome,
      requiredArtifacts: required,
      sealedArtifacts: sealed.map((s) => s.name),
      retryBudget: retryBudgetOf(run, cfg.retryBudget),
    });

    // A reclaim of interruptible capacity (ADR 0035) is re-dispatched whatever the retry budget says.
    const platformEnd =
      decision.kind === "retry" || (decision.kind === "fail" && decision.outcome === "platform_failure");
    if (platformEnd && (await reclaimHonoured(tx, a, rep.cause))) {
      await finishAttempt(
        tx,
        a,
        "platform_failure",
        dispatch.RECLAIMED_CAUSE,
        rep.message ?? "the cloud reclaimed the interruptible host; re-dispatched to on-demand capacity",
        rep,
      );
      await requeueReclaimed(tx, a);
      return { accepted: true as const, jobOutcome: "retry_scheduled" as const };
    }
    switch (decision.kind) {
      case "cancelled_first": {
        // Cancel committed first: record that this attempt stopped, publish nothing.
        await finishAttempt(
          tx,
          a,
          "cancelled",
          "run.cancelled",
          "the run was cancelled before this attempt completed",
          rep,
        );
        await finishJob(tx, run, a, "cancelled", "run.cancelled", null);
        await finishRunIfDone(tx, run, cfg.retention);
        return { accepted: false as const, reason: "run_cancelled" as const };
      }
      case "succeed": {
        await finishAttempt(tx, a, "success", null, null, rep);
        for (const g of sealed) {
          await tx.$executeRaw`
            INSERT INTO artifact_binding (run_id, job_id, name, generation_id) VALUES (${run.id}::uuid, ${a.jobId}::uuid, ${g.name}, ${g.id}::uuid)`;
        }
        await finishJob(tx, run, a, "success", null, null);
        // Provenance follows through the outbox: completion never waits for signing (issue 17).
        if (sealed.length > 0)
          await enqueueOutbox(
            tx,
            "attestation.create",
            { jobId: a.jobId, runId: run.id, orgId: run.orgId, epoch: a.epoch },
            { dedupeKey: a.jobId },
          );
        await advanceRun(tx, run, cfg.retention);
        return { accepted: true as const, jobOutcome: "success" as const };
      }
      case "fail": {
        // A stop asked of an attempt while its run is still running can only be a matrix fail-fast
        // (a run cancel makes the run cancelling first): the job is its casualty, not a root cause.
        const failFastStop = decision.outcome === "cancelled" && a.cancelRequested && run.status === "running";
        const cause = failFastStop ? FAIL_FAST_CAUSE : (decision.cause ?? rep.cause ?? defaultCause(decision.outcome));
        const message = decision.message ?? rep.message ?? null;
        await finishAttempt(tx, a, decision.outcome, cause, message, rep);
        await finishJob(tx, run, a, decision.outcome, cause, message);
        await advanceRun(tx, run, cfg.retention);
        return { accepted: true as const, jobOutcome: decision.outcome };
      }
      case "requeue": {
        await finishAttempt(
          tx,
          a,
          "platform_failure",
          dispatch.PREEMPTED_CAUSE,
          "stopped to return lent capacity to its owner; re-queued",
          rep,
        );
        await requeuePreempted(tx, a);
        return { accepted: true as const, jobOutcome: "retry_scheduled" as const };
      }
      case "retry": {
        const cause = decision.cause ?? rep.cause ?? "platform.unknown";
        await finishAttempt(tx, a, "platform_failure", cause, decision.message ?? rep.message ?? null, rep);
        await scheduleRetry(tx, cfg, run, a);
        return { accepted: true as const, jobOutcome: "retry_scheduled" as const };
      }
    }
  });
}

function defaultCause(o: Outcome): string {
  return o === "user_failure"
    ? "step.failed"
    : o === "timed_out"
      ? "job.timeout"
      : o === "cancelled"
        ? "run.cancelled"
        : o === "blocked_by_policy"
          ? "policy.denied"
          : "platform.unknown";
}

async function artifactState(
  tx: Tx,
  a: AttemptView,
): Promise<{ required: string[]; sealed: { id: string; name: string }[] }> {
  const rows = await tx.$queryRaw<{ definition: WorkflowDefinition; job_index: number }[]>`
    SELECT r.definition, j.job_index FROM job_run j JOIN workflow_run r ON r.id = j.run_id WHERE j.id = ${a.jobId}::uuid`;
  const def = rows[0]?.definition.jobs[rows[0].job_index];
  const required = def ? def.artifacts.publish.map((p) => p.name) : [];
  const sealed = await tx.$queryRaw<{ id: string; name: string }[]>`
    SELECT id, name FROM artifact_generation WHERE attempt_id = ${a.id}::uuid AND state = 'sealed'`;
  return { required, sealed: sealed.filter((s) => required.includes(s.name)) };
}

export async function finishAttempt(
  tx: Tx,
  a: AttemptView,
  outcome: Outcome,
  cause: string | null,
  message: string | null,
  rep?: Pick<CompletionReport, "exitCode" | "phases" | "sandboxDestroyed">,
): Promise<void> {
  const n = await tx.$executeRaw`
    UPDATE attempt SET status = 'completed', outcome = ${outcome}, cause = ${cause}, cause_message = ${message},
      exit_code = ${rep?.exitCode ?? null}::int, finished_at = now(),
      stopped_at = CASE WHEN ${rep?.sandboxDestroyed ?? false} THEN now() ELSE stopped_at END,
      image_ms = COALESCE(${rep?.phases?.imageMs ?? null}::int, image_ms),
      dispatch_ms = COALESCE(${rep?.phases?.dispatchMs ?? null}::int, dispatch_ms),
      execution_ms = COALESCE(${rep?.phases?.executionMs ?? null}::int, execution_ms),
      finalize_ms = COALESCE(${rep?.phases?.finalizeMs ?? null}::int, finalize_ms)
    WHERE id = ${a.id}::uuid AND status = ANY(${ATTEMPT_ENDS_FROM}::text[])`;
  if (n !== 1) throw new DomainError("ATTEMPT.STALE_EPOCH", "attempt already finished");
  // Release the org's cap slot exactly once: the guarded update above succeeds only once. The slot
  // row is this attempt's own (ADR 0042), so completions of one org touch different rows; an org
  // without a hard cap holds none and this matches nothing. A slot at or past the cap (lowered, or
  // removed, since it was taken) is deleted rather than freed, so an org keeps as many slots as its cap.
  await tx.$executeRaw`
    WITH gone AS (
      DELETE FROM org_pool_slot s WHERE s.attempt_id = ${a.id}::uuid
        AND NOT EXISTS (SELECT 1 FROM entitlement e WHERE e.org_id = s.org_id AND e.pool = s.pool AND s.slot < e.hard_cap)
      RETURNING 1)
    UPDATE org_pool_slot SET attempt_id = NULL WHERE attempt_id = ${a.id}::uuid AND NOT EXISTS (SELECT 1 FROM gone)`;
  await recordTransition(tx, {
    orgId: a.orgId,
    runId: a.runId,
    jobId: a.jobId,
    attemptId: a.id,
    entity: "attempt",
    from: "running",
    to: "completed",
    reason: outcome,
    data: { epoch: a.epoch, cause },
  });
  // Every way an attempt ends passes here, so its usage row (ADR 0045) commits with the end or not at all.
  await recordUsage(tx, a.id);
  // A log the agent did not seal is marked gapped (ADR 0006).
  await endUnsealedLog(tx, a, outcome);
  // Host health (issue 22): repeated platform failures on one host quarantine it, in this transaction.
  if (outcome === "platform_failure") await quarantineHostIfUnhealthy(tx, a.id, cause);
}

export async function finishJob(
  tx: Tx,
  run: { id: string; orgId: string },
  a: AttemptView,
  outcome: Outcome,
  cause: string | null,
  message: string | null,
): Promise<void> {
  const n = await tx.$executeRaw`
    UPDATE job_run SET status = 'completed', outcome = ${outcome}, cause = ${cause}, cause_message = ${message}, finished_at = now()
    WHERE id = ${a.jobId}::uuid AND status = ANY(${JOB_FINISHES_FROM}::text[]) AND current_epoch = ${a.epoch}`;
  if (n !== 1) throw new DomainError("JOB.ILLEGAL_TRANSITION", "job is not running this attempt");
  await recordTransition(tx, {
    orgId: run.orgId,
    runId: run.id,
    jobId: a.jobId,
    attemptId: a.id,
    entity: "job",
    from: "running",
    to: "completed",
    reason: "attempt_finished",
    data: { outcome, cause, epoch: a.epoch },
  });
}

/** Platform failure with budget left: back to READY under a new generation after backoff. */
export async function scheduleRetry(
  tx: Tx,
  cfg: EngineConfig,
  run: { id: string; orgId: string; status: RunStatus },
  a: AttemptView,
): Promise<void> {
  const retry = a.platformRetries + 1;
  const delay = backoffDelayMs(retry, randomInt(1_000_000) / 1_000_000, {
    baseMs: cfg.backoffBaseMs,
    maxMs: cfg.backoffMaxMs,
  });
  const notBefore = new Date(a.now.getTime() + delay);
  await tx.$executeRaw`UPDATE job_run SET platform_retries = platform_retries + 1 WHERE id = ${a.jobId}::uuid`;
  const jobs = await tx.$queryRaw<
    { id: string; pool: string }[]
  >`SELECT id, pool FROM job_run WHERE id = ${a.jobId}::uuid`;
  await makeJobsReady(tx, jobs, "retry_scheduled", { notBefore });
}

/** Preempted background work goes straight back to the queue: not a failure, not a retry. */
export async function requeuePreempted(tx: Tx, a: AttemptView): Promise<void> {
  await makeJobsReady(tx, [{ id: a.jobId }], "retry_scheduled");
}
