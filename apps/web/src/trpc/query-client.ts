import { defaultShouldDehydrateQuery, QueryClient } from "@tanstack/react-query";

export function makeQueryClient(): QueryClient {
  return new QueryClient({
    defaultOptions: {
      queries: {
        // Server-rendered data is fresh for a moment, so hydration does not refetch at once.
        staleTime: 5_000,
        // Refusals and missing runs will not change on retry; network blips might.
        retry: (count, err) => count < 2 && !/NOT_FOUND|FORBIDDEN|UNAUTHORIZED|BAD_REQUEST/.test(codeOf(err)),
        refetchOnWindowFocus: true,
      },
      dehydrate: {
        shouldDehydrateQuery: (q) => defaultShouldDehydrateQuery(q) || q.state.status === "pending",
      },
    },
  });
}

export function codeOf(err: unknown): string {
  const data = (err as { data?: { code?: unknown } } | null)?.data;
  return typeof data?.code === "string" ? data.code : "";
}
