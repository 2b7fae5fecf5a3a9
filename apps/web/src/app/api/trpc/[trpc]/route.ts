import { fetchRequestHandler } from "@trpc/server/adapters/fetch";
import { createTrpcContext } from "@/server/trpc/context.ts";
import { trpcResponseMeta } from "@/server/trpc/response-meta.ts";
import { toErrorResponse } from "@/server/http/error-map.ts";
import { readLimited } from "@/server/http/route.ts";
import { webLogger } from "@/server/logger.ts";
import { appRouter } from "@/server/trpc/router.ts";

export const dynamic = "force-dynamic";

/**
 * Dashboard bodies are a few hundred bytes (a slug, an id, a host pattern); past this the request
 * is refused (413 REQUEST.TOO_LARGE) before tRPC parses anything, so nobody can make the server
 * buffer and parse megabytes of JSON with one cookie.
 */
const MAX_TRPC_BODY_BYTES = 1024 * 1024;

async function handler(incoming: Request): Promise<Response> {
  let req = incoming;
  if (incoming.method === "POST") {
    let body: Uint8Array;
    try {
      body = await readLimited(incoming, MAX_TRPC_BODY_BYTES);
    } catch (e) {
      return toErrorResponse(e);
    }
    req = new Request(incoming.url, {
      method: "POST",
      headers: incoming.headers,
      body: Buffer.from(body),
      signal: incoming.signal,
    });
  }
  return fetchRequestHandler({
    endpoint: "/api/trpc",
    req,
    router: appRouter,
    createContext: createTrpcContext,
    responseMeta: trpcResponseMeta,
    onError: ({ error, path }) => {
      // Expected refusals (not found, forbidden, conflicts) are answers, not incidents.
      if (error.code !== "INTERNAL_SERVER_ERROR" && error.code !== "SERVICE_UNAVAILABLE") return;
      webLogger().error("trpc request failed", { path, code: error.code, err: error.cause ?? error });
    },
  });
}

export { handler as GET, handler as POST };
