import type { DomainError } from "@kiln/domain";
import type { TRPC_ERROR_CODE_KEY } from "@trpc/server";
import { toErrorResponse } from "../http/error-map.ts";

// Domain error codes are mapped to HTTP statuses in exactly one place (server/http/error-map.ts,
// conventions rule 6). tRPC answers derive from that status, so a new DomainErrorCode gets the same
// meaning on the dashboard as on /v1 without a second table to keep in step.
const BY_STATUS: Record<number, TRPC_ERROR_CODE_KEY> = {
  400: "BAD_REQUEST",
  401: "UNAUTHORIZED",
  403: "FORBIDDEN",
  404: "NOT_FOUND",
  409: "CONFLICT",
  // tRPC has no "gone": an expired artifact is NOT_FOUND on the dashboard, its domainCode says why.
  410: "NOT_FOUND",
  413: "PAYLOAD_TOO_LARGE",
  422: "UNPROCESSABLE_CONTENT",
  429: "TOO_MANY_REQUESTS",
  503: "SERVICE_UNAVAILABLE",
};

export function trpcCodeFor(e: DomainError): TRPC_ERROR_CODE_KEY {
  return BY_STATUS[toErrorResponse(e).status] ?? "INTERNAL_SERVER_ERROR";
}

/** The same test as the REST error map: the database being down is "retry later", not a bug. */
export function isUnavailable(e: unknown): boolean {
  const msg = e instanceof Error ? e.message : String(e);
  return /ECONNREFUSED|Can't reach database|Connection terminated|timeout exceeded when trying to connect|57P01|server closed the connection/i.test(
    msg,
  );
}
