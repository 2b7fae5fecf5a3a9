// Domain errors carry namespaced codes; apps map them to HTTP/tRPC in exactly one place.
export type DomainErrorCode =
  | "RUN.NOT_FOUND"
  | "RUN.ILLEGAL_TRANSITION"
  | "RUN.ALREADY_FINISHED"
  | "RUN.NOT_FINISHED"
  | "RUN.NOTHING_TO_RERUN"
  | "RUN.CANCELLED"
  | "JOB.NOT_FOUND"
  | "JOB.NOT_READY"
  | "JOB.ILLEGAL_TRANSITION"
  | "ATTEMPT.STALE_EPOCH"
  | "ATTEMPT.LEASE_EXPIRED"
  | "ATTEMPT.NOT_FOUND"
  | "ARTIFACT.REQUIRED_MISSING"
  | "ARTIFACT.NOT_DECLARED"
  | "ARTIFACT.NOT_FOUND"
  | "ARTIFACT.UPLOAD_NOT_FOUND"
  | "ARTIFACT.TOO_LARGE"
  | "ARTIFACT.SESSION_CONFLICT"
  | "ARTIFACT.PART_CONFLICT"
  | "ARTIFACT.PARTS_INCOMPLETE"
  | "ARTIFACT.VERIFICATION_FAILED"
  | "ARTIFACT.STORE_UNAVAILABLE"
  | "CACHE.NOT_DECLARED"
  | "CACHE.WRITE_REFUSED"
  | "CACHE.TOO_LARGE"
  | "CACHE.UPLOAD_NOT_FOUND"
  | "CACHE.VERIFICATION_FAILED"
  | "CACHE.STORE_UNAVAILABLE"
  | "CLAIM.NO_CAPACITY"
  | "CLAIM.DECLINED"
  | "AUTH.UNAUTHENTICATED"
  | "AUTH.FORBIDDEN"
  | "AUTH.TOKEN_EXPIRED"
  | "AUTH.TOKEN_REVOKED"
  | "AUTH.CREDENTIAL_REVOKED"
  | "ATTEMPT.HOST_REVOKED"
  | "TOKEN.NOT_FOUND"
  | "REQUEST.CROSS_ORIGIN"
  | "WEBHOOK.BAD_SIGNATURE"
  | "WEBHOOK.UNKNOWN_REPO"
  | "WEBHOOK.BAD_PAYLOAD"
  | "IDEMPOTENCY.KEY_REUSED"
  | "IDEMPOTENCY.IN_FLIGHT"
  | "IDEMPOTENCY.KEY_REQUIRED"
  | "REPO.NOT_FOUND"
  | "REPO.CLONE_URL_REFUSED"
  | "REPO.REF_NOT_FOUND"
  | "REPO.SOURCE_UNAVAILABLE"
  | "RUN.COMMIT_NOT_ON_REF"
  | "ENTITLEMENT.PLATFORM_ADMIN_REQUIRED"
  | "REQUEST.INVALID"
  | "REQUEST.TOO_LARGE"
  | "SESSION.NOT_FOUND"
  | "POOL.POLICY_REFUSED"
  | "POOL.ISOLATION_TOO_WEAK"
  | "LOG.CONFLICT"
  | "LOG.OUT_OF_ORDER"
  | "LOG.INCOMPLETE"
  | "LOG.ENDED"
  | "LOG.LIMIT_EXCEEDED"
  | "LOG.JOURNAL_FULL"
  | "LOG.ARCHIVE_UNAVAILABLE"
  | "SCHEDULE.INVALID"
  | "SCHEDULE.NOT_FOUND"
  | "SCHEDULE.EXISTS"
  | "SCHEDULE.LIMIT_REACHED"
  | "SCHEDULE.FROM_WORKFLOW";

export class DomainError extends Error {
  readonly code: DomainErrorCode;
  readonly details: Record<string, unknown> | undefined;
  constructor(code: DomainErrorCode, message: string, details?: Record<string, unknown>) {
    super(message);
    this.name = "DomainError";
    this.code = code;
    this.details = details;
  }
}

export function isDomainError(e: unknown): e is DomainError {
  return e instanceof DomainError;
}

export function assertNever(value: never, what = "value"): never {
  throw new Error(`unexpected ${what}: ${JSON.stringify(value)}`);
}
