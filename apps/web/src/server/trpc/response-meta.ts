import { isDomainError } from "@kiln/domain";
import type { TRPCError } from "@trpc/server";

/**
 * Headers of every tRPC answer: never cached, and a RATE.LIMITED refusal (docs/adr/0044) carries
 * the same Retry-After as /v1 answers with.
 */
export function trpcResponseMeta({ errors }: { errors: readonly TRPCError[] }): { headers: Headers } {
  const headers = new Headers({ "cache-control": "no-store" });
  const retry = errors.map((e) => retryAfterSeconds(e.cause)).find((s) => s !== null);
  if (retry !== undefined && retry !== null) headers.set("retry-after", String(retry));
  return { headers };
}

function retryAfterSeconds(cause: unknown): number | null {
  if (!isDomainError(cause) || cause.code !== "RATE.LIMITED") return null;
  const s = cause.details?.retry_after_seconds;
  return typeof s === "number" ? s : null;
}
