import { TRPCClientError } from "@trpc/client";

/**
 * A failed mutation as "<CODE>: <message>", the server's namespaced code first (POOL.EXISTS,
 * POOL.INTERRUPTIBLE_REFUSED), so that what the page says is what the API and the CLI say.
 */
export function serverError(e: unknown): string {
  const message = e instanceof Error ? e.message : String(e);
  const code = e instanceof TRPCClientError ? (e.data as { domainCode?: unknown } | undefined)?.domainCode : null;
  return typeof code === "string" && code ? `${code}: ${message}` : message;
}
