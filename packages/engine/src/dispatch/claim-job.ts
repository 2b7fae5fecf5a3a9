import { withTx, type Db, type Tx } from "@kiln/db";
import { decideClaim, DomainError, type JobStatus, type RunStatus, type TrustClass, type WorkflowDefinition } from "@kiln/domain";
import type { EngineConfig } from "../shared/config.ts";
import { recordTransition } from "../shared/journal.ts";
import { lockRun } from "../runs/advance-run.ts";
import { platformKey, signJobToken } from "../identity/tokens.ts";
import { takeCandidates } from "./dispatch-view.ts";
import { egressPolicyForAttempt, type EgressPolicy } from "../egress/egress-policy-for-attempt.ts";

export interface ClaimRequest {
  sessionId: string;
  /** Chosen by the agent; a retried claim with the same id returns the same ticket. */
  claimRequestId: string;
  /** A dispatch hint from the work queue, when the agent got one. */
  offer?: { jobId: string; generation: number } | null;
}

export interface JobTicket {
  runId: string;
  jobId: string;
  attemptId: string;
  orgId: string;
  epoch: number;
  jobToken: string;
  leaseExpiresAt: string;
  leaseTtlMs: number;
  heartbeatMs: number;
  trustClass: TrustClass;
  /** Mediated egress (issue 3): fixed at claim, enforced by the host's proxy. */
  egress: EgressPolicy;
  source: { cloneUrl: string; commitSha: string };
  job: {
    name: string;
    index: number;
    image: string | null;
    /** The image's manifest digest pinned at freeze time (ADR 0012); the agent pulls exactly it. */
    imageDigest: string | null;
    steps: string[];
    env: Record<string, string>;
    timeoutMinutes: number;
    artifacts: WorkflowDefinition["jobs"][number]["artifacts"];
    /** Build cache block (issue 8); the key itself is derived by the control plane at each call. */
    cache: WorkflowDefinition["jobs"][number]["cache"];
  };
}

export type ClaimResult =
  | { kind: "claimed"; ticket: JobTicket; replayed: boolean }
  | { kind: "none" }
  | { kind: "declined"; reason: string };

interface SessionRow {
  id: string;
  pool: string;
  capacity: number;
  running: number;
  hostname: string;
}

/**
 * The claim transaction (seed 000 section 7): run active, job READY, generation matches,
 * predecessors succeeded, capacity free; then a new attempt with the next epoch and a lease on
 * database time, all or nothing. Lock order is run then job, the same as completion and cancel.
 */
export async function claimJob(db: Db, cfg: EngineConfig, req: ClaimRequest): Promise<ClaimResult> {
  const key = await platformKey(db);
  const pool = await poolOfSession(db, req.sessionId);
  // Candidates are chosen outside the transaction (the fair view may need its own connection to
  // reload); picks another claimer won meanwhile fail the locked re-check and the next round takes
  // fresh ones. A few rounds bound the work of one request; the agent simply claims again.
  // One pick per round: a pick is counted as started in the shared view, so taking several would
  // withhold jobs from concurrent claimers (and from an org's hard cap) until the next reload.
  let result: { kind: "claimed"; attemptId: string; replayed: boolean } | { kind: "none" } | { kind: "declined"; reason: string } = { kind: "none" };
  const began = performance.now();
  for (let round = 0; round < 6; round++) {
    // After a round whose picks all failed, only a view loaded since this claim began is trusted.
    const viewMs = round === 0 ? cfg.dispatchViewMs : Math.min(cfg.dispatchViewMs, performance.now() - began);
    const candidates = await chooseCandidates(db, { ...cfg, dispatchViewMs: viewMs }, pool, req.offer ?? null);
    result = await withTx(db, "claim-job", async (tx) => {
      const replay = await findTicketByRequest(tx, req);
      if (replay) return { kind: "claimed" as const, attemptId: replay, replayed: true };
      // The update is the session's row lock too: one claim per session at a time (capacity check).
      const locked = await tx.$queryRaw<SessionRow[]>`
        UPDATE agent_session SET last_seen_at = now() WHERE id = ${req.sessionId}::uuid
        RETURNING id, pool, capacity, hostname,
                  (SELECT count(*)::int FROM attempt WHERE session_id = ${req.sessionId}::uuid AND status = 'running') AS running`;
      const session = locked[0];
      if (!session) throw new DomainError("SESSION.NOT_FOUND", "unknown agent session; register again");
      let lastReason = "none";
      for (const c of candidates) {
        const outcome = await tryClaim(tx, cfg, session, c, req);
        if (outcome.ok) return { kind: "claimed" as const, attemptId: outcome.attemptId, replayed: false };
        lastReason = outcome.reason;
        if (outcome.reason === "no_capacity") break;
      }
      return candidates.length === 0 ? { kind: "none" as const } : { kind: "declined" as const, reason: lastReason };
    });
    if (result.kind !== "declined" || result.reason === "no_capacity") break;
  }
  if (result.kind !== "claimed") return result;
  return { kind: "claimed", ticket: await loadTicket(db, cfg, key, result.attemptId), replayed: result.replayed };
}

/**
 * Which READY jobs to try, in order. Fair policy: the next picks of this process's ranking of the
 * pool (tiers, entitlements with lending, weighted share; see dispatch-view.ts); a dispatch hint
 * only says "there is work". FIFO policy (the benchmark's baseline): the hinted job first, then the
 * oldest READY jobs.
 */
async function chooseCandidates(
  db: Db,
  cfg: EngineConfig,
  pool: string,
  offer: { jobId: string; generation: number } | null,
): Promise<{ id: string; run_id: string }[]> {
  if (cfg.dispatchPolicy === "fair") {
    const picks = await takeCandidates(db, pool, "fair", cfg.dispatchViewMs, 1);
    return picks.map((p) => ({ id: p.jobId, run_id: p.runId }));
  }
  const hinted = offer
    ? await db.$queryRaw<{ id: string; run_id: string }[]>`SELECT id, run_id FROM job_run WHERE id = ${offer.jobId}::uuid AND pool = ${pool}`
    : [];
  const oldest = await db.$queryRaw<{ id: string; run_id: string }[]>`
    SELECT id, run_id FROM job_run
    WHERE status = 'ready' AND pool = ${pool} AND (next_attempt_at IS NULL OR next_attempt_at <= now())
    ORDER BY ready_at, id LIMIT 16`;
  return [...hinted, ...oldest.filter((o) => o.id !== offer?.jobId)];
}

// A session's pool never changes: remembered per process, one query less per claim (bounded).
const sessionPools = new Map<string, string>();

async function poolOfSession(db: Db, sessionId: string): Promise<string> {
  const known = sessionPools.get(sessionId);
  if (known !== undefined) return known;
  const rows = await db.$queryRaw<{ pool: string }[]>`SELECT pool FROM agent_session WHERE id = ${sessionId}::uuid`;
  const pool = rows[0]?.pool;
  if (pool === undefined) throw new DomainError("SESSION.NOT_FOUND", "unknown agent session; register again");
  if (sessionPools.size >= 10_000) sessionPools.clear();
  sessionPools.set(sessionId, pool);
  return pool;
}

async function findTicketByRequest(tx: Tx, req: ClaimRequest): Promise<string | null> {
  const rows = await tx.$queryRaw<{ id: string; session_id: string }[]>`
    SELECT id, session_id FROM attempt WHERE claim_request_id = ${req.claimRequestId}`;
  const row = rows[0];
  if (!row) return null;
  // A claim id is only meaningful to the session that made it.
  if (row.session_id !== req.sessionId) throw new DomainError("REQUEST.INVALID", "claim_request_id already used by another session");
  return row.id;
}

async function tryClaim(
  tx: Tx,
  cfg: EngineConfig,
  session: SessionRow,
  candidate: { id: string; run_id: string },
  req: ClaimRequest,
): Promise<{ ok: true; attemptId: string } | { ok: false; reason: string }> {
  const run = await lockRun(tx, candidate.run_id, "share");
  if (!run) return { ok: false, reason: "not_ready" };
  const jobs = await tx.$queryRaw<
    { id: string; org_id: string; status: JobStatus; dispatch_generation: number; current_epoch: number; next_attempt_at: Date | null; preds_ok: boolean; ready_at: Date | null; now: Date }[]
  >`
    SELECT j.id, j.org_id, j.status, j.dispatch_generation, j.current_epoch, j.next_attempt_at, j.ready_at, now() AS now,
      NOT EXISTS (SELECT 1 FROM job_run p WHERE p.run_id = j.run_id AND p.job_index = ANY(j.needs)
                  AND p.outcome IS DISTINCT FROM 'success') AS preds_ok
    FROM job_run j WHERE j.id = ${candidate.id}::uuid FOR UPDATE SKIP LOCKED`;
  const job = jobs[0];
  if (!job) return { ok: false, reason: "locked" };
  const decision = decideClaim({
    runStatus: run.status as RunStatus,
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

  // The org's hard cap, enforced here and nowhere else: a guarded increment of its counter row,
  // atomic with the job's transition (seed 003 Q3). Over the cap, the job stays READY with the
  // reason recorded for the queue view.
  const slot = await tx.$queryRaw<{ running: number }[]>`
    INSERT INTO org_pool_usage (org_id, pool, running)
    SELECT ${run.orgId}::uuid, ${session.pool}, 1
    WHERE COALESCE((SELECT hard_cap FROM entitlement WHERE org_id = ${run.orgId}::uuid AND pool = ${session.pool}), 2147483647) > 0
    ON CONFLICT (org_id, pool) DO UPDATE SET running = org_pool_usage.running + 1
    WHERE org_pool_usage.running < COALESCE((SELECT hard_cap FROM entitlement WHERE org_id = ${run.orgId}::uuid AND pool = ${session.pool}), 2147483647)
    RETURNING running`;
  if (!slot[0]) {
    await tx.$executeRaw`UPDATE job_run SET wait_reason = 'org_cap' WHERE id = ${job.id}::uuid AND status = 'ready'`;
    return { ok: false, reason: "org_cap" };
  }
  const epoch = job.current_epoch + 1;
  const queuedMs = job.ready_at ? Math.max(0, job.now.getTime() - job.ready_at.getTime()) : null;
  const inserted = await tx.$queryRaw<{ id: string }[]>`
    INSERT INTO attempt (job_id, run_id, org_id, epoch, session_id, claim_request_id, host, status, lease_expires_at, queued_ms, pool)
    VALUES (${job.id}::uuid, ${run.id}::uuid, ${run.orgId}::uuid, ${epoch}, ${session.id}::uuid, ${req.claimRequestId},
            ${session.hostname}, 'running', now() + make_interval(secs => ${cfg.leaseTtlMs / 1000}), ${queuedMs}, ${session.pool})
    RETURNING id`;
  const attemptId = inserted[0]?.id;
  if (!attemptId) throw new Error("attempt insert returned nothing");
  const updated = await tx.$executeRaw`
    UPDATE job_run SET status = 'running', current_epoch = ${epoch}, wait_reason = NULL
    WHERE id = ${job.id}::uuid AND status = 'ready' AND dispatch_generation = ${job.dispatch_generation}`;
  if (updated !== 1) throw new Error("guarded claim update lost a race it should have been locked against");
  await recordTransition(tx, {
    orgId: run.orgId, runId: run.id, jobId: job.id, attemptId, entity: "job", from: "ready", to: "running", reason: "claimed",
    data: { epoch, session: session.id, host: session.hostname, generation: job.dispatch_generation },
  });
  // The run's start time is derived from its first attempt (see get-run): writing it here would
  // upgrade the shared run lock that concurrent claimers of one run hold, and deadlock them.
  return { ok: true, attemptId };
}

export async function loadTicket(db: Db, cfg: EngineConfig, key: Buffer, attemptId: string): Promise<JobTicket> {
  const rows = await db.$queryRaw<
    { id: string; job_id: string; run_id: string; org_id: string; epoch: number; lease_expires_at: Date; job_index: number; name: string; definition: WorkflowDefinition; trust_class: TrustClass; clone_url: string; commit_sha: string }[]
  >`
    SELECT a.id, a.job_id, a.run_id, a.org_id, a.epoch, a.lease_expires_at, j.job_index, j.name, r.definition, r.trust_class,
           rp.clone_url, r.commit_sha
    FROM attempt a JOIN job_run j ON j.id = a.job_id JOIN workflow_run r ON r.id = a.run_id JOIN repo rp ON rp.id = r.repo_id
    WHERE a.id = ${attemptId}::uuid`;
  const a = rows[0];
  if (!a) throw new DomainError("ATTEMPT.NOT_FOUND", "attempt vanished");
  const def = a.definition.jobs[a.job_index];
  if (!def) throw new Error(`definition has no job ${a.job_index}`);
  return {
    runId: a.run_id,
    jobId: a.job_id,
    attemptId: a.id,
    orgId: a.org_id,
    epoch: a.epoch,
    jobToken: signJobToken(key, { jobId: a.job_id, attemptId: a.id, epoch: a.epoch }),
    leaseExpiresAt: a.lease_expires_at.toISOString(),
    leaseTtlMs: cfg.leaseTtlMs,
    heartbeatMs: cfg.heartbeatMs,
    trustClass: a.trust_class,
    egress: await egressPolicyForAttempt(db, { orgId: a.org_id, trustClass: a.trust_class, platformHosts: cfg.egressPlatformHosts }),
    source: { cloneUrl: a.clone_url, commitSha: a.commit_sha },
    job: {
      name: a.name,
      index: a.job_index,
      image: def.image?.ref ?? null,
      imageDigest: def.image?.digest ?? null,
      steps: def.steps,
      env: { ...a.definition.env, ...def.env },
      timeoutMinutes: def.timeoutMinutes,
      artifacts: def.artifacts,
      cache: def.cache ?? null,
    },
  };
}
