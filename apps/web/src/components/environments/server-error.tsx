import { TRPCClientError } from "@trpc/client";
import type { AppRouter } from "@/server/trpc/router.ts";

/**
 * A refused mutation as the environment forms show it: the server's namespaced code (the domain's,
 * e.g. POLICY.INVALID, else tRPC's) and its message, so what the user reads matches the API and CLI.
 */
export function serverError(e: unknown): { code: string; message: string } {
  if (e instanceof TRPCClientError) {
    const data = (e as TRPCClientError<AppRouter>).data;
    return { code: data?.domainCode ?? data?.code ?? "ERROR", message: e.message };
  }
  return { code: "ERROR", message: e instanceof Error ? e.message : String(e) };
}

/** The inline alert under a form: code first, in monospace, then the message. */
export function ServerErrorText({ error }: { error: { code: string; message: string } }) {
  return (
    <p role="alert" className="mt-2 text-sm text-red-700 dark:text-red-400">
      <code className="font-mono text-xs">{error.code}</code> {error.message}
    </p>
  );
}

/** The same, inside a Form's alert (which supplies the role and the spacing). */
export function ServerErrorInline({ error }: { error: { code: string; message: string } }) {
  return (
    <>
      <code className="font-mono text-xs">{error.code}</code> {error.message}
    </>
  );
}
