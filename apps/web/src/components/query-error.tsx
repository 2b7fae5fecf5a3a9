"use client";
import { ErrorState } from "@kiln/ui";
import { codeOf } from "@/trpc/query-client.ts";

/** A failed query, in words the user can act on. */
export function QueryError({ error, what, onRetry }: { error: unknown; what: string; onRetry?: () => void }) {
  const code = codeOf(error);
  const message = error instanceof Error ? error.message : String(error);
  if (code === "NOT_FOUND")
    return (
      <ErrorState
        title={`${what} not found`}
        message={`It does not exist, or it belongs to an org you are not a member of.`}
      />
    );
  if (code === "FORBIDDEN") return <ErrorState title="Not allowed" message={message} />;
  if (code === "UNAUTHORIZED")
    return <ErrorState title="Signed out" message="Your session ended. Reload the page to sign in again." />;
  if (code === "SERVICE_UNAVAILABLE")
    return <ErrorState title="Temporarily unavailable" message={message} onRetry={onRetry} />;
  return <ErrorState title={`Could not load ${what.toLowerCase()}`} message={message} onRetry={onRetry} />;
}
