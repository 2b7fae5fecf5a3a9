import { fetchRequestHandler } from "@trpc/server/adapters/fetch";
import { createTrpcContext } from "@/server/trpc/context.ts";
import { webLogger } from "@/server/logger.ts";
import { appRouter } from "@/server/trpc/router.ts";

export const dynamic = "force-dynamic";

function handler(req: Request): Promise<Response> {
  return fetchRequestHandler({
    endpoint: "/api/trpc",
    req,
    router: appRouter,
    createContext: createTrpcContext,
    responseMeta: () => ({ headers: new Headers({ "cache-control": "no-store" }) }),
    onError: ({ error, path }) => {
      // Expected refusals (not found, forbidden, conflicts) are answers, not incidents.
      if (error.code !== "INTERNAL_SERVER_ERROR" && error.code !== "SERVICE_UNAVAILABLE") return;
      webLogger().error("trpc request failed", { path, code: error.code, err: error.cause ?? error });
    },
  });
}

export { handler as GET, handler as POST };
