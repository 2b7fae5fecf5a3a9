import { fetchRequestHandler } from "@trpc/server/adapters/fetch";
import { createTrpcContext } from "@/server/trpc/context.ts";
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
      const cause = error.cause instanceof Error ? error.cause.message : error.message;
      console.error(
        JSON.stringify({
          level: "error",
          msg: "trpc request failed",
          path,
          code: error.code,
          err: cause.slice(0, 500),
        }),
      );
    },
  });
}

export { handler as GET, handler as POST };
