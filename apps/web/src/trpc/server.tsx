import { dehydrate, HydrationBoundary } from "@tanstack/react-query";
import { createTRPCOptionsProxy } from "@trpc/tanstack-react-query";
import { cache, type ReactNode } from "react";
import { createTrpcContext } from "@/server/trpc/context.ts";
import { makeQueryClient } from "./query-client.ts";
import { appRouter } from "@/server/trpc/router.ts";

// Server components call procedures in-process (no HTTP hop) and hand the results to the client
// cache, so a page's first HTML already has its data and the client only polls for changes.
export const getQueryClient = cache(makeQueryClient);

export const trpc = createTRPCOptionsProxy({ ctx: createTrpcContext, router: appRouter, queryClient: getQueryClient });

export function HydrateClient({ children }: { children: ReactNode }) {
  return <HydrationBoundary state={dehydrate(getQueryClient())}>{children}</HydrationBoundary>;
}
