import { randomUUID } from "node:crypto";
import { Prisma, sqlPool, withTx, type Db } from "@kiln/db";
import {
  decideClaim,
  decidePlacement,
  untrustedAllowedOn,
  type HostFacts,
  type IsolationClass,
  DEFAULT_RUNNER_SIZE,
  DomainError,
  JOB_TRANSITIONS,
  legalSources,
  type JobStatus,
  type RunnerSize,
  type RunStatus,
  type TrustClass,
  type WorkflowDefinition,
  type dispatch,
} from "@kiln/domain";
import type { EngineConfig } from "../config/index.ts";
import type { SqlClient, SqlPool } from "../shared/sql-pool.ts";
import { statusArrayLiteral } from "../shared/status-guard.ts";
import { platformKey, signJobToken, type SigningKey } from "../identity/index.ts";
import { takeCandidates } from "./dispatch-view.ts";
import { poolPolicyFromRow } from "./pool-policy.ts";
import { egressPolicy, egressPolicyForAttempt, type EgressPolicy } from "../egress/index.ts";
import { cachedCapacityKind, interruptibleClaimRefusal } from "./interruptible-capacity.ts";
import { QUOTA_WAIT_REASON, withinMinuteQuotaSql } from "../metering/index.ts";

// The claim's guards, from the job table. Fixed at module load: the claim's statements stay
// prepared with the same text on every call (ADR 0015).
const CLAIMABLE = legalSources(JOB_TRANSITIONS, "claimed", "running");
const CLAIMABLE_SQL = statusArrayLiteral(CLAIMABLE);
const CAPPED_SQL = statusArrayLiteral(legalSources(JOB_TRANSITIONS, "held_by_org_cap", "ready"));

export interface ClaimRequest {
  sessionId: string;
  /** Chosen by the agent; a retried claim with the same id returns the same ticket. */
  claimRequestId: string;
  /** A dispatch hint from the work queue, when the agent got one. */
  offer?: { jobId: string; generation: number } | null;
  /**
   * The SHA-256 of the caller's host credential. Given, the claim itself proves that the
   * credential is live and owns the session (inside its first statement); the agent protocol
   * always gives it. Omitted only by callers that authenticated the session themselves.
   */
  credentialHash?: string | null;
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
    /** runs_on.size (issue 20): what a microVM host sizes the sandbox to. */
    size: RunnerSize;
    artifacts: WorkflowDefinition["jobs"][number]["artifacts"];
    /** Build cache block (issue 8); the key itself is derived by the control plane at each call. */
    cache: WorkflowDefinition["jobs"][number]["cache"];
    /** Declared secret names and secrets_required (issue 16): the agent asks the broker when there are some. */
    secrets: string[];
    secretsRequired: boolean;
  };
}

export type ClaimResult =
  | { kind: "claimed"; ticket: JobTicket; replayed: boolean }
  | { kind: "none" }
  | { kind: "declined"; reason: string };

type SessionRow = {
  id: string;
  pool: string;
  capacity: number;
  running: number;
  hostname: string;
  /** The org the session's host credential is bound to (an org-owned pool), or null. */
  token_org: string | null;
  /** The isolation class the host registered with (its sandbox driver). */
  isolation: string | null;
  /** The pool's policy row, read in the claim's first statement: null means the strict default. */
  min_isolation: IsolationClass | null;
  admits_untrusted: boolean | null;
  untrusted_on_process: boolean | null;
  owner_org_id: string | null;
  development: boolean | null;
  /** Runner labels and sizes the agent advertised (issue 20). */
  runner_labels: string[];
  sizes: RunnerSize[];
  /** Interruptible capacity (issue 22): the pool row's flag and the pool whose queue it serves. */
  interruptible: boolean | null;
  serves: string | null;
};

function hostFacts(
  isolation: string | null,
  org: string | null,
  runner?: { labels: readonly string[]; sizes: readonly RunnerSize[] },
): HostFacts {
  // Anything but a reported microVM or an admitted lack of isolation is treated as process.
  return {
    isolation: isolation === "microvm" ? "microvm" : isolation === "none" ? "none" : "process",
    orgId: org,
    ...(runner ? { labels: runner.labels, sizes: runner.sizes } : {}),
  };
}

function sessionPolicy(s: SessionRow) {
  return poolPolicyFromRow(
    s.pool,
    s.min_isolation === null
      ? undefined
      : {
          min_isolation: s.min_isolation,
          admits_untrusted: s.admits_untrusted ?? true,
          untrusted_on_process: s.untrusted_on_process ?? false,
          owner_org_id: s.owner_org_id,
          development: s.development ?? false,
        },
  );
}

/**
 * The claim transaction (seed 000 section 7): run active, job READY, generation matches,
 * predecessors succeeded, capacity free; then a new attempt with the next epoch and a lease on
 * database time, all or nothing. Lock order is run then job, the same as completion and cancel.
 *
 * It runs as plain SQL on the Db's node-postgres pool (ADR 0015): four statements between BEGIN
 * and COMMIT, and the ticket is built from what they returned, with no read after the commit.
 */
export async function claimJob(db: Db, cfg: EngineConfig, req: ClaimRequest): Promise<ClaimResult> {
  const key = await platformKey(db);
  const sql = sqlPool(db);
  const credential = req.credentialHash ?? null;
  const { pool, org, isolation, runner } = await poolOfSession(sql, req.sessionId, credential);
  // A draining or quarantined host takes no picks (issue 22): a pick counts as started in the shared
  // view, so asking for candidates it may not claim would withhold them from other hosts. Advisory
  // (cached for a second); the transaction below re-checks the runner row it reads.
  // A draining host still runs the transaction (with no candidates) so that a retried claim gets
  // its ticket back.
  const standing = await cachedRunnerStanding(sql, req.sessionId);
  if (standing.state === "quarantined") throw quarantined(standing.reason);
  const draining = standing.state === "draining";
  // Candidates leave out untrusted jobs this host may never run (advisory: the policy is cached for a
  // second here; the transaction below decides on the pool row it reads itself).
  const trustedOnly = !untrustedAllowedOn(await cachedPoolPolicy(sql, pool), hostFacts(isolation, org));
  // An interruptible pool's hosts draw background work from the queue of the pool it serves (issue 22,
  // ADR 0035); advisory like the policy above, re-checked on the locked rows.
  const kind = await cachedCapacityKind(sql, pool);
  // Candidates are chosen outside the transaction (the fair view may need its own connection to
  // reload); picks another claimer won meanwhile fail the locked re-check and the next round takes
  // fresh ones. A few rounds bound the work of one request; the agent simply claims again.
  // One pick per round: a pick is counted as started in the shared view, so taking several would
  // withhold jobs from concurrent claimers (and from an org's hard cap) until the next reload.
  let result:
    | { kind: "claimed"; claimed: Claimed | null; attemptId: string; replayed: boolean }
    | { kind: "none" }
    | { kind: "declined"; reason: string } = { kind: "none" };
  const began = performance.now();
  for (let round = 0; round < 6; round++) {
    // After a round whose picks all failed, only a view loaded since this claim began is trusted.
    const viewMs = round === 0 ? cfg.dispatchViewMs : Math.min(cfg.dispatchViewMs, performance.now() - began);
    const candidates = draining
      ? []
      : await chooseCandidates(
          db,
          { ...cfg, dispatchViewMs: viewMs },
          kind.queuePool,
          org,
          req.offer ?? null,
          trustedOnly,
          runner,
          kind.interruptible,
        );
    result = await withTx(sql, "claim-job", async (c) => {
      // The update is the session's row lock too: one claim per session at a time (capacity check).
      // The host credential is checked here as well, on every claim, not only by the cached pool
      // lookup: one round trip less than a separate authentication query (ADR 0015).
      // Revocation is checked on the session's own credential even when the caller authenticated
      // it (credentialHash omitted): a revoked host claims nothing, whoever asks for it.
      const locked = await c.query<
        SessionRow & {
          token_ok: boolean;
          revoked: boolean;
          replay_id: string | null;
          replay_session: string | null;
          runner_state: string | null;
          quarantine_reason: string | null;
        }
      >({
        name: "claim-session-5",
        text: `WITH s AS (
                 UPDATE agent_session SET last_seen_at = now()
                 WHERE id = $1::uuid
                   AND ($3::text IS NULL OR agent_token_id = (SELECT id FROM agent_token WHERE token_hash = $3))
                 RETURNING id, pool, capacity, hostname, agent_token_id, labels, runner_labels, sizes, runner_id)
               SELECT s.id, s.pool, s.capacity, s.hostname, t.org_id AS token_org, s.labels->>'isolation' AS isolation,
                      s.runner_labels, s.sizes,
                      p.min_isolation, p.admits_untrusted, p.untrusted_on_process, p.owner_org_id, p.development,
                      p.interruptible, p.serves,
                      ($3::text IS NULL OR EXISTS (SELECT 1 FROM agent_token WHERE token_hash = $3)) AS token_ok,
                      (t.revoked_at IS NOT NULL
                       OR ($3::text IS NOT NULL AND EXISTS (SELECT 1 FROM agent_token WHERE token_hash = $3 AND revoked_at IS NOT NULL))) AS revoked,
                      (SELECT count(*)::int FROM attempt WHERE session_id = s.id AND status = 'running') AS running,
                      r.id AS replay_id, r.session_id AS replay_session,
                      h.state AS runner_state, h.quarantine_reason
               FROM (SELECT 1) AS one LEFT JOIN s ON true LEFT JOIN agent_token t ON t.id = s.agent_token_id
                 LEFT JOIN pool p ON p.name = s.pool LEFT JOIN runner h ON h.id = s.runner_id
                 LEFT JOIN attempt r ON r.claim_request_id = $2`,
        values: [req.sessionId, req.claimRequestId, credential],
      });
      const session = locked.rows[0];
      if (!session?.token_ok) throw new DomainError("AUTH.UNAUTHENTICATED", "invalid host credential");
      if (session.revoked) throw new DomainError("AUTH.CREDENTIAL_REVOKED", "this host credential was revoked");
      if (!session.id) throw new DomainError("SESSION.NOT_FOUND", "unknown agent session; register again");
      if (session.runner_state === "revoked") throw new DomainError("AUTH.CREDENTIAL_REVOKED", "this host was revoked");
      if (session.runner_state === "quarantined") throw quarantined(session.quarantine_reason);
      // A draining host finishes what it runs and claims nothing new (a replayed claim is not new).
      if (session.runner_state === "draining" && !session.replay_id) return { kind: "none" as const };
      if (session.replay_id) {
        // A claim id is only meaningful to the session that made it.
        if (session.replay_session !== req.sessionId)
          throw new DomainError("REQUEST.INVALID", "claim_request_id already used by another session");
        return { kind: "claimed" as const, claimed: null, attemptId: session.replay_id, replayed: true };
      }
      let lastReason = "none";
      for (const cand of candidates) {
        const outcome = await tryClaim(c, cfg, session, cand, req);
        if (outcome.ok)
          return {
            kind: "claimed" as const,
            claimed: outcome.claimed,
            attemptId: outcome.claimed.attemptId,
            replayed: false,
          };
        lastReason = outcome.reason;
        if (outcome.reason === "no_capacity") break;
      }
      return candidates.length === 0 ? { kind: "none" as const } : { kind: "declined" as const, reason: lastReason };
    });
    if (result.kind !== "declined" || result.reason === "no_capacity") break;
  }
  if (result.kind !== "claimed") return result;
  const ticket = result.claimed
    ? ticketFrom(cfg, key, result.claimed)
    : await loadTicket(db, cfg, key, result.attemptId);
  return { kind: "claimed", ticket, replayed: result.replayed };
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

// A session's pool never changes: remembered per process (per credential, when one is given, so
// a cached answer never stands in for a credential check), one query less per claim (bounded).
// Revocation is not cached: the claim transaction re-checks it on every claim.
interface HostRunner {
  labels: string[];
  sizes: RunnerSize[];
}

interface SessionFacts {
  pool: string;
  org: string | null;
  isolation: string | null;
  runner: HostRunner;
}

const sessionPools = new Map<string, SessionFacts>();

async function poolOfSession(sql: SqlPool, sessionId: string, credential: string | null): Promise<SessionFacts> {
  const cacheKey = `${sessionId}:${credential ?? ""}`;
  const known = sessionPools.get(cacheKey);
  if (known !== undefined) return known;
  const rows = await sql.query<{
    token: "live" | "revoked" | null;
    pool: string | null;
    org: string | null;
    isolation: string | null;
    runner_labels: string[] | null;
    sizes: RunnerSize[] | null;
  }>({
    name: "session-pool-4",
    text: `SELECT CASE WHEN $2::text IS NULL THEN 'live'
                       ELSE (SELECT CASE WHEN revoked_at IS NULL THEN 'live' ELSE 'revoked' END FROM agent_token WHERE token_hash = $2) END AS token,
                  s.pool, t.org_id AS org, s.labels->>'isolation' AS isolation, s.runner_labels, s.sizes
           FROM (SELECT 1) AS one
             LEFT JOIN agent_session s ON s.id = $1::uuid
               AND ($2::text IS NULL OR s.agent_token_id = (SELECT id FROM agent_token WHERE token_hash = $2))
             LEFT JOIN agent_token t ON t.id = s.agent_token_id`,
    values: [sessionId, credential],
  });
  const row = rows.rows[0];
  if (!row?.token) throw new DomainError("AUTH.UNAUTHENTICATED", "invalid host credential");
  if (row.token === "revoked") throw new DomainError("AUTH.CREDENTIAL_REVOKED", "this host credential was revoked");
  if (row.pool === null) throw new DomainError("SESSION.NOT_FOUND", "unknown agent session; register again");
  if (sessionPools.size >= 10_000) sessionPools.clear();
  const found = {
    pool: row.pool,
    org: row.org,
    isolation: row.isolation,
    runner: { labels: row.runner_labels ?? [], sizes: row.sizes ?? [DEFAULT_RUNNER_SIZE] },
  };
  sessionPools.set(cacheKey, found);
  return found;
}

/** What the claim transaction returns: everything the ticket needs, read under its locks. */
interface Claimed {
  attemptId: string;
  runId: string;
  jobId: string;
  orgId: string;
  epoch: number;
  leaseExpiresAt: Date;
  jobIndex: number;
  name: string;
  jobDef: WorkflowDefinition["jobs"][number] | null;
  runEnv: Record<string, string> | null;
  trustClass: TrustClass;
  cloneUrl: string;
  commitSha: string;
  allowList: string[];
}

async function tryClaim(
  c: SqlClient,
  cfg: EngineConfig,
  session: SessionRow,
  candidate: { id: string; run_id: string },
  req: ClaimRequest,
): Promise<{ ok: true; claimed: Claimed } | { ok: false; reason: string }> {
  // Checked before any lock: a full session takes nothing, whatever the candidate's state.
  if (session.running >= session.capacity) return { ok: false, reason: "no_capacity" };
  const runs = await c.query<{
    id: string;
    org_id: string;
    status: RunStatus;
    trust_class: TrustClass;
    commit_sha: string;
    clone_url: string;
  }>({
    name: "claim-lock-run",
    text: `SELECT r.id, r.org_id, r.status, r.trust_class, r.commit_sha, rp.clone_url
           FROM workflow_run r JOIN repo rp ON rp.id = r.repo_id WHERE r.id = $1::uuid FOR SHARE OF r`,
    values: [candidate.run_id],
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
  const jobs = await c.query<{
    id: string;
    status: JobStatus;
    dispatch_generation: number;
    current_epoch: number;
    next_attempt_at: Date | null;
    ready_at: Date | null;
    now: Date;
    preds_ok: boolean;
    job_index: number;
    name: string;
    job_def: WorkflowDefinition["jobs"][number] | null;
    run_env: Record<string, string> | null;
    runner_labels: string[];
    runner_size: RunnerSize;
    tier: dispatch.Tier;
    pool: string;
    interruptible_excluded: boolean;
  }>({
    name: "claim-lock-job-3",
    text: `SELECT j.id, j.status, j.dispatch_generation, j.current_epoch, j.next_attempt_at, j.ready_at, now() AS now, j.job_index, j.name,
             j.runner_labels, j.runner_size, j.tier, j.pool, j.interruptible_excluded,
             NOT EXISTS (SELECT 1 FROM job_run p WHERE p.run_id = j.run_id AND p.job_index = ANY(j.needs)
                         AND p.outcome IS DISTINCT FROM 'success') AS preds_ok,
             r.definition->'jobs'->j.job_index AS job_def, r.definition->'env' AS run_env
           FROM job_run j JOIN workflow_run r ON r.id = j.run_id WHERE j.id = $1::uuid FOR UPDATE OF j SKIP LOCKED`,
    values: [candidate.id],
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

  // One statement for the rest. The org's hard cap is enforced here and nowhere else (seed 003 Q3):
  // a capped org's claim takes one free slot row below the cap (ADR 0042: SKIP LOCKED, so racing
  // claimers take different rows instead of queueing on one counter row), and none while a slot at or
  // past a lowered cap is still held; the attempt, the job's guarded transition and its event exist
  // only if a slot was taken. An org without a hard cap takes none. Over the cap, the job stays READY
  // with the reason recorded for the queue view. The org's egress allow-list is read in the same
  // statement. An org out of minutes this month (ADR 0045) takes nothing on a pool that is not its
  // own: the job stays READY with QUOTA_WAIT_REASON; the check sums at most 16 tally rows, unlocked,
  // and only for an org with a quota.
  const epoch = job.current_epoch + 1;
  const queuedMs = job.ready_at ? Math.max(0, job.now.getTime() - job.ready_at.getTime()) : null;
  const data = JSON.stringify({
    epoch,
    session: session.id,
    host: session.hostname,
    generation: job.dispatch_generation,
  });
  const done = await c.query<{
    attempt_id: string | null;
    lease_expires_at: Date | null;
    updated: number;
    events: number;
    allow_list: string[];
    over_quota: boolean;
  }>({
    name: "claim-commit-4",
    text: `WITH quota AS (
             SELECT 1 AS over FROM org o
             WHERE o.id = $1::uuid AND o.minute_quota IS NOT NULL
               AND NOT EXISTS (SELECT 1 FROM pool qp WHERE qp.name = $2 AND qp.owner_org_id IS NOT NULL)
               AND (SELECT COALESCE(sum(t.seconds), 0) FROM org_minute_tally t
                    WHERE t.org_id = $1::uuid AND t.month = date_trunc('month', now() AT TIME ZONE 'UTC')::date)
                   >= o.minute_quota::bigint * 60),
           cap AS (
             SELECT hard_cap AS n FROM entitlement WHERE org_id = $1::uuid AND pool = $2 AND hard_cap IS NOT NULL),
           pick AS (
             SELECT s.slot FROM org_pool_slot s
             WHERE s.org_id = $1::uuid AND s.pool = $2 AND s.attempt_id IS NULL AND s.slot < (SELECT n FROM cap)
               AND NOT EXISTS (SELECT 1 FROM quota)
               AND NOT EXISTS (SELECT 1 FROM org_pool_slot o WHERE o.org_id = $1::uuid AND o.pool = $2
                                 AND o.slot >= (SELECT n FROM cap) AND o.attempt_id IS NOT NULL)
             LIMIT 1 FOR UPDATE OF s SKIP LOCKED),
           held AS (
             UPDATE org_pool_slot s SET attempt_id = $16::uuid FROM pick
             WHERE s.org_id = $1::uuid AND s.pool = $2 AND s.slot = pick.slot AND s.attempt_id IS NULL
             RETURNING s.slot),
           slot AS (
             SELECT 1 AS ok WHERE NOT EXISTS (SELECT 1 FROM quota) AND (NOT EXISTS (SELECT 1 FROM cap) OR EXISTS (SELECT 1 FROM held))),
           ins AS (
             INSERT INTO attempt (id, job_id, run_id, org_id, epoch, session_id, claim_request_id, host, status, lease_expires_at, queued_ms, pool, on_interruptible)
             SELECT $16::uuid, $3::uuid, $4::uuid, $1::uuid, $5, $6::uuid, $7, $8, 'running', now() + make_interval(secs => $9::float8), $10, $2, $15 FROM slot
             RETURNING id, lease_expires_at),
           upd AS (
             UPDATE job_run SET status = 'running', current_epoch = $5, wait_reason = NULL
             WHERE id = $3::uuid AND status = ANY(${CLAIMABLE_SQL}) AND dispatch_generation = $11 AND EXISTS (SELECT 1 FROM slot)
             RETURNING id),
           ev AS (
             INSERT INTO transition_event (org_id, run_id, job_id, attempt_id, entity, from_state, to_state, reason, data)
             SELECT $1::uuid, $4::uuid, $3::uuid, ins.id, 'job', $14, 'running', 'claimed', $12::jsonb FROM ins
             RETURNING id),
           capped AS (
             UPDATE job_run SET wait_reason = CASE WHEN EXISTS (SELECT 1 FROM quota) THEN '${QUOTA_WAIT_REASON}' ELSE 'org_cap' END
             WHERE id = $3::uuid AND status = ANY(${CAPPED_SQL}) AND NOT EXISTS (SELECT 1 FROM slot)
             RETURNING id),
           -- A deploy run's environment lock names the attempt now holding it (issue 18, ADR 0033):
           -- one probe of a partial index that holds only the locks currently held.
           holder AS (
             UPDATE deployment_lock SET job_id = $3::uuid, attempt_id = ins.id, epoch = $5
             FROM ins WHERE deployment_lock.run_id = $4::uuid AND deployment_lock.released_at IS NULL
             RETURNING deployment_lock.id)
           SELECT (SELECT id FROM ins) AS attempt_id, (SELECT lease_expires_at FROM ins) AS lease_expires_at,
                  (SELECT count(*) FROM upd)::int AS updated, (SELECT count(*) FROM ev)::int AS events,
                  EXISTS (SELECT 1 FROM quota) AS over_quota,
                  CASE WHEN $13 THEN ARRAY(SELECT pattern FROM egress_rule WHERE org_id = $1::uuid ORDER BY pattern LIMIT 1000)
                       ELSE '{}'::text[] END AS allow_list`,
    values: [
      run.org_id,
      // The job's own pool: an interruptible host's attempt holds its org's slot in the pool it serves.
      job.pool,
      job.id,
      run.id,
      epoch,
      session.id,
      req.claimRequestId,
      session.hostname,
      cfg.leaseTtlMs / 1000,
      queuedMs,
      job.dispatch_generation,
      data,
      run.trust_class === "trusted",
      job.status,
      session.interruptible === true,
      // Chosen here so that the slot row can name the attempt in the same statement that inserts it.
      randomUUID(),
    ],
  });
  const row = done.rows[0];
  if (!row?.attempt_id || !row.lease_expires_at)
    return { ok: false, reason: row?.over_quota ? QUOTA_WAIT_REASON : "org_cap" };
  if (row.updated !== 1 || row.events !== 1)
    throw new Error("guarded claim update lost a race it should have been locked against");
  // The run's start time is derived from its first attempt (see get-run): writing it here would
  // upgrade the shared run lock that concurrent claimers of one run hold, and deadlock them.
  return {
    ok: true,
    claimed: {
      attemptId: row.attempt_id,
      runId: run.id,
      jobId: job.id,
      orgId: run.org_id,
      epoch,
      leaseExpiresAt: row.lease_expires_at,
      jobIndex: job.job_index,
      name: job.name,
      jobDef: job.job_def,
      runEnv: job.run_env,
      trustClass: run.trust_class,
      cloneUrl: run.clone_url,
      commitSha: run.commit_sha,
      allowList: row.allow_list,
    },
  };
}

function ticketFrom(cfg: EngineConfig, key: SigningKey, a: Claimed): JobTicket {
  const def = a.jobDef;
  if (!def) throw new Error(`definition has no job ${a.jobIndex}`);
  return {
    runId: a.runId,
    jobId: a.jobId,
    attemptId: a.attemptId,
    orgId: a.orgId,
    epoch: a.epoch,
    jobToken: signJobToken(key, { jobId: a.jobId, attemptId: a.attemptId, epoch: a.epoch }),
    leaseExpiresAt: a.leaseExpiresAt.toISOString(),
    leaseTtlMs: cfg.leaseTtlMs,
    heartbeatMs: cfg.heartbeatMs,
    trustClass: a.trustClass,
    egress: egressPolicy({ trustClass: a.trustClass, allowList: a.allowList }),
    source: { cloneUrl: a.cloneUrl, commitSha: a.commitSha },
    job: {
      name: a.name,
      index: a.jobIndex,
      image: def.image?.ref ?? null,
      imageDigest: def.image?.digest ?? null,
      steps: def.steps,
      env: { ...a.runEnv, ...def.env },
      timeoutMinutes: def.timeoutMinutes,
      size: def.runsOn?.size ?? DEFAULT_RUNNER_SIZE,
      artifacts: def.artifacts,
      cache: def.cache ?? null,
      // Definitions frozen before issue 16 have neither field.
      secrets: def.secrets ?? [],
      secretsRequired: def.secretsRequired ?? false,
    },
  };
}

/** A ticket read back from the database: a retried claim (same claim_request_id) gets its original one. */
async function loadTicket(db: Db, cfg: EngineConfig, key: SigningKey, attemptId: string): Promise<JobTicket> {
  const rows = await db.$queryRaw<
    {
      id: string;
      job_id: string;
      run_id: string;
      org_id: string;
      epoch: number;
      lease_expires_at: Date;
      job_index: number;
      name: string;
      definition: WorkflowDefinition;
      trust_class: TrustClass;
      clone_url: string;
      commit_sha: string;
    }[]
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
    egress: await egressPolicyForAttempt(db, { orgId: a.org_id, trustClass: a.trust_class }),
    source: { cloneUrl: a.clone_url, commitSha: a.commit_sha },
    job: {
      name: a.name,
      index: a.job_index,
      image: def.image?.ref ?? null,
      imageDigest: def.image?.digest ?? null,
      steps: def.steps,
      env: { ...a.definition.env, ...def.env },
      timeoutMinutes: def.timeoutMinutes,
      size: def.runsOn?.size ?? DEFAULT_RUNNER_SIZE,
      artifacts: def.artifacts,
      cache: def.cache ?? null,
      // Definitions frozen before issue 16 have neither field.
      secrets: def.secrets ?? [],
      secretsRequired: def.secretsRequired ?? false,
    },
  };
}

function quarantined(reason: string | null): DomainError {
  return new DomainError(
    "RUNNER.QUARANTINED",
    `this host is quarantined (${reason ?? "no reason given"}); it claims nothing until an admin lifts it`,
  );
}

// A host's standing for the pre-candidate check only, per session, for a second.
const standingCache = new Map<string, { at: number; state: string | null; reason: string | null }>();

async function cachedRunnerStanding(
  sql: SqlPool,
  sessionId: string,
): Promise<{ state: string | null; reason: string | null }> {
  const hit = standingCache.get(sessionId);
  if (hit && performance.now() - hit.at < 1_000) return hit;
  const rows = await sql.query<{ state: string | null; reason: string | null }>({
    name: "claim-runner-standing",
    text: `SELECT h.state, h.quarantine_reason AS reason FROM agent_session s JOIN runner h ON h.id = s.runner_id WHERE s.id = $1::uuid`,
    values: [sessionId],
  });
  const got = { at: performance.now(), state: rows.rows[0]?.state ?? null, reason: rows.rows[0]?.reason ?? null };
  if (standingCache.size >= 10_000) standingCache.clear();
  standingCache.set(sessionId, got);
  return got;
}

// The pool policy for candidate filtering only, per process, for a second: a claim loop should not
// read it on every call, and the transaction re-reads it anyway.
const policyCache = new Map<string, { at: number; policy: ReturnType<typeof poolPolicyFromRow> }>();

async function cachedPoolPolicy(sql: SqlPool, pool: string): Promise<ReturnType<typeof poolPolicyFromRow>> {
  const hit = policyCache.get(pool);
  if (hit && performance.now() - hit.at < 1_000) return hit.policy;
  const rows = await sql.query<{
    min_isolation: IsolationClass;
    admits_untrusted: boolean;
    untrusted_on_process: boolean;
    owner_org_id: string | null;
    development: boolean;
  }>({
    name: "claim-pool-policy",
    text: `SELECT min_isolation, admits_untrusted, untrusted_on_process, owner_org_id, development FROM pool WHERE name = $1`,
    values: [pool],
  });
  const policy = poolPolicyFromRow(pool, rows.rows[0]);
  if (policyCache.size >= 1_000) policyCache.clear();
  policyCache.set(pool, { at: performance.now(), policy });
  return policy;
}
