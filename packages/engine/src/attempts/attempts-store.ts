// The attempts capability's SQL for the fence (docs/adr/0039: a capability's SQL lives in its store;
// use cases load -> decide -> persist through it). The heartbeat, ID-token minting and any other
// job-token path that must act only for the job's current, live attempt share this one predicate and
// this one refusal, so the rule cannot drift between copies. Other capabilities import this file
// directly (not through attempts/index.ts), which .dependency-cruiser.cjs allows for stores because a
// store imports no capability: only @kiln/db, @kiln/domain and shared/.
import { Prisma, type DbOrTx } from "@kiln/db";
import { ATTEMPT_TRANSITIONS, decideHeartbeat, DomainError, legalSources, type AttemptStatus } from "@kiln/domain";

/** What a job token claims (attempts' JobClaims), restated so this store imports no use case. */
interface FenceClaims {
  attemptId: string;
  jobId: string;
  epoch: number;
}

// Live means the lease can still be renewed: the attempt table's lease_renewed sources.
const LIVE_STATUSES = legalSources(ATTEMPT_TRANSITIONS, "lease_renewed", "running");

/**
 * The fence as a WHERE fragment over `attempt a` joined to `job_run j ON j.id = a.job_id`: the
 * claimed attempt of the claimed job, at the reported epoch, live, the job's current epoch, its lease
 * not yet expired (database time). Callers add their own locks (FOR SHARE) or guarded SET.
 */
export function currentAttemptFence(claims: FenceClaims): Prisma.Sql {
  return Prisma.sql`a.id = ${claims.attemptId}::uuid AND a.job_id = ${claims.jobId}::uuid
    AND a.epoch = ${claims.epoch} AND a.status = ANY(${LIVE_STATUSES}::text[])
    AND j.current_epoch = a.epoch AND a.lease_expires_at > now()`;
}

interface FenceState {
  epoch: number;
  status: AttemptStatus;
  lease_live: boolean;
  current_epoch: number;
  host_revoked: boolean;
}

/**
 * Why the fence refused these claims, from a fresh read (nothing is written): ATTEMPT.NOT_FOUND, the
 * domain's stale-epoch / not-running / lease refusal, ATTEMPT.HOST_REVOKED, else ATTEMPT.LEASE_EXPIRED
 * with `leaseMessage` (the lease ended between the guarded statement and this read).
 */
export async function refuseStaleAttempt(db: DbOrTx, claims: FenceClaims, leaseMessage: string): Promise<never> {
  const rows = await db.$queryRaw<FenceState[]>`
    SELECT a.epoch, a.status, a.lease_expires_at > now() AS lease_live, j.current_epoch,
           EXISTS (SELECT 1 FROM agent_session s JOIN agent_token t ON t.id = s.agent_token_id
                   WHERE s.id = a.session_id AND t.revoked_at IS NOT NULL) AS host_revoked
    FROM attempt a JOIN job_run j ON j.id = a.job_id
    WHERE a.id = ${claims.attemptId}::uuid AND a.job_id = ${claims.jobId}::uuid`;
  const s = rows[0];
  if (!s) throw new DomainError("ATTEMPT.NOT_FOUND", "unknown attempt");
  decideHeartbeat({
    job: { currentEpoch: s.current_epoch },
    attempt: { epoch: s.epoch, status: s.status, leaseLive: s.lease_live },
    reportedEpoch: claims.epoch,
  });
  // A revoked host keeps no lease: refused renewals let it lapse, and the reconciler then fences
  // the attempt as a platform failure (issue 15).
  if (s.host_revoked) throw new DomainError("ATTEMPT.HOST_REVOKED", "the host credential of this attempt was revoked");
  throw new DomainError("ATTEMPT.LEASE_EXPIRED", leaseMessage);
}
