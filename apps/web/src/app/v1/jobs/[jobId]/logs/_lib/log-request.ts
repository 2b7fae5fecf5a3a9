// Shared by the public log routes: who is asking, which attempt/stream they mean, and streaming.
import { DomainError, type LogStream } from "@kiln/domain";
import { authenticateApiToken } from "@kiln/engine";
import type { Logger } from "@kiln/logger";
import { z } from "zod";
import { currentUser } from "@/server/auth/index.ts";
import { sessionOrgForJob } from "@/server/auth/session-for-job.ts";
import { services } from "@/server/context.ts";

/**
 * Either an org-scoped API token (Authorization: Bearer) or the dashboard's session cookie of a
 * member of the job's org. Authorised on every connect; another org's job is a 404 either way.
 */
export async function authenticateLogReader(req: Request, jobId: string): Promise<{ orgId: string }> {
  if (req.headers.get("authorization") !== null) {
    const caller = await authenticateApiToken(services().db, req.headers.get("authorization"));
    return { orgId: caller.orgId };
  }
  // No cookie, no session: don't spin up sign-in machinery for a plain unauthenticated call.
  if (req.headers.get("cookie") !== null) {
    const scope = await sessionOrgForJob(jobId);
    if (scope) return { orgId: scope.orgId };
    if (await currentUser()) throw new DomainError("JOB.NOT_FOUND", "job not found");
  }
  throw new DomainError("AUTH.UNAUTHENTICATED", "send an API token (Authorization: Bearer) or sign in");
}

const attempt = z
  .string()
  .regex(/^[1-9][0-9]{0,8}$/, "attempt must be a positive integer (the attempt's epoch)")
  .optional()
  .describe("pin one attempt by its epoch (default: the newest)");

/** The log routes' query strings, as the route builder validates and the OpenAPI document shows them. */
export const logEventsQuery = z.object({ attempt });
export const logRawQuery = z.object({
  stream: z.enum(["stdout", "stderr"], "stream must be stdout or stderr").optional().describe("default stdout"),
  attempt,
});

export function attemptParam(url: URL): number | null {
  const raw = url.searchParams.get("attempt");
  if (raw === null) return null;
  if (!/^[1-9][0-9]{0,8}$/.test(raw))
    throw new DomainError("REQUEST.INVALID", "attempt must be a positive integer (the attempt's epoch)");
  return Number(raw);
}

export function streamParam(url: URL): LogStream {
  const raw = url.searchParams.get("stream") ?? "stdout";
  if (raw !== "stdout" && raw !== "stderr") throw new DomainError("REQUEST.INVALID", "stream must be stdout or stderr");
  return raw;
}

/** Streams `chunks` as the response body, pulling only as fast as the client reads. */
export function streamingResponse(
  chunks: AsyncGenerator<string | Uint8Array, void>,
  abort: AbortController,
  headers: Record<string, string>,
  /** The route's logger, carrying the org and job ids (a failed stream is logged here). */
  log: Logger,
): Response {
  const encoder = new TextEncoder();
  const body = new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        try {
          const { value, done } = await chunks.next();
          if (done) controller.close();
          else controller.enqueue(typeof value === "string" ? encoder.encode(value) : value);
        } catch (e) {
          log.error("log stream failed", { err: e });
          controller.error(e);
        }
      },
      async cancel() {
        // The client went away: wake the generator's waits, then let it run its finally blocks.
        abort.abort();
        await chunks.return(undefined);
      },
    },
    { highWaterMark: 0 },
  );
  return new Response(body, { status: 200, headers });
}
