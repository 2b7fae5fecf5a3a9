import { isDomainError, type DomainErrorCode } from "@kiln/domain";
import { countFencingRefusal } from "@kiln/engine";
import { webLogger } from "../logger.ts";

// The one place domain error codes become HTTP statuses (conventions rule 6).
const STATUS: Record<DomainErrorCode, number> = {
  "RUN.NOT_FOUND": 404,
  "RUN.ILLEGAL_TRANSITION": 409,
  "RUN.ALREADY_FINISHED": 409,
  "RUN.NOT_FINISHED": 409,
  "RUN.NOTHING_TO_RERUN": 409,
  "RUN.CANCELLED": 409,
  "JOB.NOT_FOUND": 404,
  "JOB.NOT_READY": 409,
  "JOB.ILLEGAL_TRANSITION": 409,
  "ATTEMPT.STALE_EPOCH": 409,
  "ATTEMPT.LEASE_EXPIRED": 409,
  "ATTEMPT.NOT_FOUND": 404,
  "ARTIFACT.REQUIRED_MISSING": 409,
  "ARTIFACT.NOT_DECLARED": 422,
  "ARTIFACT.NOT_FOUND": 404,
  "ARTIFACT.UPLOAD_NOT_FOUND": 404,
  "ARTIFACT.TOO_LARGE": 413,
  "ARTIFACT.SESSION_CONFLICT": 409,
  "ARTIFACT.PART_CONFLICT": 409,
  "ARTIFACT.PARTS_INCOMPLETE": 409,
  "ARTIFACT.VERIFICATION_FAILED": 422,
  "ARTIFACT.STORE_UNAVAILABLE": 503,
  // Its bytes no longer match its signed provenance (issue 17): kept for the audit, never served.
  "ARTIFACT.QUARANTINED": 403,
  "ATTESTATION.NOT_FOUND": 404,
  "CACHE.NOT_DECLARED": 422,
  "CACHE.WRITE_REFUSED": 403,
  "CACHE.TOO_LARGE": 413,
  "CACHE.UPLOAD_NOT_FOUND": 404,
  "CACHE.VERIFICATION_FAILED": 422,
  "CACHE.STORE_UNAVAILABLE": 503,
  "CLAIM.NO_CAPACITY": 409,
  "CLAIM.DECLINED": 409,
  "AUTH.UNAUTHENTICATED": 401,
  "AUTH.FORBIDDEN": 403,
  "AUTH.TOKEN_EXPIRED": 401,
  "AUTH.TOKEN_REVOKED": 401,
  "AUTH.CREDENTIAL_REVOKED": 401,
  // 409 like a fenced epoch: the agent stops the step and destroys the sandbox at once.
  "ATTEMPT.HOST_REVOKED": 409,
  "TOKEN.NOT_FOUND": 404,
  // The signing key cannot be opened (the identity KEK is missing or another one): an operator fix.
  "ID_TOKEN.KEY_UNAVAILABLE": 503,
  // The job-token keys cannot be opened (no identity KEK, or the keys are sealed under another one):
  // an operator fix, so not a 401 the agent would take for its attempt being over (issue 28).
  "JOB_TOKEN.KEY_UNAVAILABLE": 503,
  "REQUEST.CROSS_ORIGIN": 403,
  "WEBHOOK.BAD_SIGNATURE": 401,
  "WEBHOOK.UNKNOWN_REPO": 404,
  "WEBHOOK.BAD_PAYLOAD": 400,
  // Forge identity (issue 28): an installation id on a delivery the App did not sign, a repository id
  // other than the one pinned, a PR head branch named like a ref; a name another repo has up to case;
  // a forge that does not show the repo to the credential given.
  "WEBHOOK.INSTALLATION_UNVERIFIED": 403,
  "WEBHOOK.REPOSITORY_MISMATCH": 403,
  "WEBHOOK.HEAD_REF_REFUSED": 422,
  "REPO.NAME_TAKEN": 409,
  "REPO.FORGE_UNVERIFIED": 422,
  // Untrusted runs get no ID token unless their repo opted in (ADR 0024, amended in issue 28).
  "ID_TOKEN.UNTRUSTED_REFUSED": 403,
  "IDEMPOTENCY.KEY_REUSED": 422,
  "IDEMPOTENCY.IN_FLIGHT": 409,
  "IDEMPOTENCY.KEY_REQUIRED": 400,
  "REPO.NOT_FOUND": 404,
  // A clone URL outside the source policy (docs/adr/0017): the request is well-formed, the URL refused.
  "REPO.CLONE_URL_REFUSED": 422,
  // A manual trigger's ref the repository does not have, or a commit that is not on it (issue 15).
  "REPO.REF_NOT_FOUND": 422,
  "RUN.COMMIT_NOT_ON_REF": 422,
  "REPO.SOURCE_UNAVAILABLE": 503,
  // Entitlements in shared pools are set by platform operators only (docs/scheduling.md).
  "ENTITLEMENT.PLATFORM_ADMIN_REQUIRED": 403,
  "REQUEST.INVALID": 400,
  "REQUEST.TOO_LARGE": 413,
  // A token, org, agent or webhook source over its bucket (docs/adr/0044): 429 with Retry-After.
  "RATE.LIMITED": 429,
  "SESSION.NOT_FOUND": 404,
  // Placement (issue 15): a pool policy the rules refuse; a host weaker than its pool requires.
  "POOL.POLICY_REFUSED": 422,
  "POOL.ISOLATION_TOO_WEAK": 403,
  // Fleet (issue 22): a reclaim names an interruptible pool's live host; a bad interruptible setting is 422.
  "POOL.NOT_INTERRUPTIBLE": 409,
  "POOL.INTERRUPTIBLE_REFUSED": 422,
  "FLEET.HOST_NOT_FOUND": 404,
  "FLEET.NO_SESSION": 409,
  "LOG.CONFLICT": 409,
  "LOG.OUT_OF_ORDER": 409,
  "LOG.INCOMPLETE": 409,
  "LOG.ENDED": 409,
  "LOG.LIMIT_EXCEEDED": 413,
  "LOG.JOURNAL_FULL": 503,
  "LOG.ARCHIVE_UNAVAILABLE": 503,
  // Forge credentials (ADR 0028): the operator's configuration is missing or changed, not the request.
  // Runners (issue 22): a quarantined host's claims are 409, not 401/403, so its agent keeps polling
  // (with backoff) and resumes by itself once an admin lifts the quarantine.
  "RUNNER.NOT_FOUND": 404,
  "RUNNER.ILLEGAL_TRANSITION": 409,
  "RUNNER.QUARANTINED": 409,
  "REGISTRATION.TOKEN_INVALID": 401,
  "REGISTRATION.TOKEN_SPENT": 401,
  "REGISTRATION.TOKEN_EXPIRED": 401,
  "REGISTRATION.POOL_MISMATCH": 403,
  "AGENT.PROTOCOL_INCOMPATIBLE": 400,
  "POOL.NOT_FOUND": 404,
  "POOL.EXISTS": 409,
  "FORGE.NO_SECRETS_KEY": 503,
  "FORGE.SECRET_UNREADABLE": 503,
  "FORGE.SECRET_KEY_MISMATCH": 503,
  // Schedules (issue 20): a cron or zone the parser refuses; one the repo has; one the workflow owns.
  "SCHEDULE.INVALID": 422,
  "SCHEDULE.NOT_FOUND": 404,
  "SCHEDULE.EXISTS": 409,
  "SCHEDULE.LIMIT_REACHED": 422,
  "SCHEDULE.FROM_WORKFLOW": 409,
  // Secrets (issue 16, ADR 0025). Another org's secret is SECRET.NOT_FOUND, like one never set.
  "SECRET.NOT_FOUND": 404,
  "SECRET.INVALID_NAME": 422,
  "WORKFLOW.ENV_NAME_RESERVED": 422,
  "SECRET.VALUE_TOO_LARGE": 413,
  // This process's key-encryption key does not open the org's data key (a rotation not yet
  // installed here, or no KEK configured): retriable once the operator installs the file.
  "SECRET.KEK_UNAVAILABLE": 503,
  "SECRET.KEK_MISMATCH": 503,
  "SECRET.DECRYPT_FAILED": 503,
  "ORG.NOT_FOUND": 404,
  // Issue 19 (docs/adr/0029): a disconnected repo keeps its history but admits no new run; an org
  // keeps at least one admin; an artifact whose bytes retention deleted is gone, not missing.
  "REPO.DISCONNECTED": 409,
  "REPO.ALREADY_CONNECTED": 409,
  "MEMBER.NOT_FOUND": 404,
  "MEMBER.LAST_ADMIN": 409,
  "ARTIFACT.EXPIRED": 410,
  // Retention (issue 21, docs/adr/0036): evicted logs are gone like expired artifacts; an org may
  // shorten a platform window but asking to lengthen one is refused, not clamped.
  "LOG.EXPIRED": 410,
  "RETENTION.WINDOW_LENGTHENED": 422,
  "RETENTION.HOLD_NOT_FOUND": 404,
  "RETENTION.HOLD_EXISTS": 409,
  // Transparency log (docs/adr/0026): a bad entry or proof request is the caller's; no checkpoint or
  // no key yet means the workers have not signed one (they do within a second of starting).
  "TLOG.ENTRY_INVALID": 422,
  "TLOG.ENTRY_NOT_FOUND": 404,
  "TLOG.ENTRY_WITHHELD": 410,
  "TLOG.HISTORY_REWRITTEN": 503,
  "TLOG.INDEX_OUT_OF_RANGE": 400,
  "TLOG.SIZE_BEYOND_LOG": 400,
  "TLOG.TILE_NOT_FOUND": 404,
  "TLOG.NO_CHECKPOINT": 503,
  "TLOG.KEY_UNAVAILABLE": 503,
  "TLOG.ORIGIN_CHANGED": 503,
  // Environments and promotions (issue 18, ADR 0032). Another org's ids answer the same 404s.
  "ENV.NOT_FOUND": 404,
  "ENV.EXISTS": 409,
  "ENV.INVALID": 422,
  "ENV.POINTER_MOVED": 409,
  "POLICY.INVALID": 422,
  "PROMOTION.NOT_FOUND": 404,
  "PROMOTION.NOT_PENDING": 409,
  "PROMOTION.ARTIFACT_NOT_FOUND": 404,
  "PROMOTION.ARTIFACT_AMBIGUOUS": 422,
  "APPROVAL.NOT_ELIGIBLE": 403,
  "APPROVAL.SEPARATION_OF_DUTIES": 403,
  "APPROVAL.DUPLICATE": 409,
  // An org token is nobody in particular: approving needs a member (session or personal token).
  "APPROVAL.MEMBER_REQUIRED": 403,
  "OVERRIDE.NOT_ALLOWED": 409,
  "OVERRIDE.EXPIRED": 409,
  "OVERRIDE.INVALID_EXPIRY": 422,
  "OVERRIDE.SECOND_APPROVER_SAME": 403,
  "ROLLBACK.NOT_A_PREVIOUS_DIGEST": 422,
  // A shredded object whose key is gone reads as gone (410): that is the point of shredding.
  "SHRED.BAD_FORMAT": 502,
  "SHRED.DECRYPT_FAILED": 502,
  "SHRED.KEY_DESTROYED": 410,
  "SHRED.KEY_UNAVAILABLE": 503,
  // Deploy runs and the deployment lock (issue 18, docs/adr/0033).
  "DEPLOY.VARIABLE_INVALID": 422,
  "DEPLOY.VARIABLE_NOT_FOUND": 404,
  "DEPLOY.TOO_MANY_VARIABLES": 422,
  "DEPLOY.CONFIG_NOT_FOUND": 404,
  "DEPLOY.LOCK_NOT_HELD": 409,
  // The lock may not be released by hand: its deploy run is still active, or Kiln will release it
  // itself at the kill bound (manual release exists only where no proof of death can).
  "DEPLOY.LOCK_RELEASE_REFUSED": 409,
};

function errorResponse(status: number, code: string, message: string, details?: Record<string, unknown>): Response {
  const headers: Record<string, string> = { "cache-control": "no-store" };
  // Back-pressure (e.g. LOG.JOURNAL_FULL) tells clients when to come back.
  if (typeof details?.retry_after_seconds === "number")
    headers["retry-after"] = String(Math.ceil(details.retry_after_seconds));
  return Response.json({ error: { code, message, ...(details ? { details } : {}) } }, { status, headers });
}

export function toErrorResponse(e: unknown): Response {
  if (isDomainError(e)) countFencingRefusal(e.code);
  if (isDomainError(e)) return errorResponse(STATUS[e.code], e.code, e.message, e.details);
  // Unexpected: log with context, answer without internals. A database outage is a 503 (retry
  // later), not a 500, because nothing was guessed or half-written.
  const msg = e instanceof Error ? e.message : String(e);
  const unavailable =
    /ECONNREFUSED|Can't reach database|Connection terminated|timeout exceeded when trying to connect|57P01|server closed the connection/i.test(
      msg,
    );
  webLogger().error("request failed", { err: e });
  return unavailable
    ? errorResponse(503, "SERVICE.UNAVAILABLE", "the control plane's database is unavailable; retry later")
    : errorResponse(500, "INTERNAL", "internal error");
}
