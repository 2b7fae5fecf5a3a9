"use client";
import { Button, Card, EmptyState, LoadingBlock } from "@kiln/ui";
import { useInfiniteQuery, useQuery } from "@tanstack/react-query";
import { usePathname, useRouter, useSearchParams } from "next/navigation";
import { useTRPC } from "@/trpc/client.tsx";
import { QueryError } from "../query-error.tsx";
import { useNow } from "../time.tsx";
import { RunFiltersBar, type FilterValues } from "./run-filters-bar.tsx";
import { filtersFrom } from "./run-filter-schema.ts";
import { RunsTable } from "./runs-table.tsx";

const KEYS = ["repoId", "ref", "trigger", "status", "outcome"] as const;

export function RunsListView({ org }: { org: string }) {
  const trpc = useTRPC();
  const router = useRouter();
  const pathname = usePathname();
  const sp = useSearchParams();
  const filters = filtersFrom(new URLSearchParams(sp.toString()));
  const now = useNow(5000);
  const repos = useQuery(trpc.runs.repos.queryOptions({ org }));
  const runs = useInfiniteQuery({
    ...trpc.runs.list.infiniteQueryOptions({ org, filters, limit: 25 }, { getNextPageParam: (p) => p.next_cursor }),
    // Only the newest page is worth re-polling; older pages do not change order.
    refetchInterval: (q) => ((q.state.data?.pages.length ?? 0) <= 1 ? 10_000 : false),
  });
  const setFilters = (v: FilterValues) => {
    const next = new URLSearchParams();
    for (const k of KEYS) {
      const value = v[k];
      if (value) next.set(k, value);
    }
    router.replace(`${pathname}${next.size ? `?${next}` : ""}`);
  };
  const all = runs.data?.pages.flatMap((p) => p.runs) ?? [];
  return (
    <div className="space-y-4">
      <h1 className="text-xl font-semibold tracking-tight">Runs</h1>
      <RunFiltersBar key={sp.toString()} value={filters} repos={repos.data ?? []} onChange={setFilters} />
      <Card>
        {runs.isPending ? (
          <LoadingBlock label="Loading runs" rows={8} />
        ) : runs.isError ? (
          <QueryError error={runs.error} what="Runs" onRetry={() => void runs.refetch()} />
        ) : all.length === 0 ? (
          <EmptyState title={Object.keys(filters).length ? "No runs match these filters" : "No runs yet"}>
            {Object.keys(filters).length
              ? "Clear a filter to see more."
              : "Push to a registered repository or trigger a run through the API."}
          </EmptyState>
        ) : (
          <>
            <RunsTable org={org} runs={all} now={now} />
            <div className="mt-4 flex justify-center">
              {runs.hasNextPage ? (
                <Button onClick={() => void runs.fetchNextPage()} disabled={runs.isFetchingNextPage}>
                  {runs.isFetchingNextPage ? "Loading…" : "Load older runs"}
                </Button>
              ) : (
                <p className="text-sm text-zinc-500 dark:text-zinc-400">
                  That is every run{Object.keys(filters).length ? " matching these filters" : ""}.
                </p>
              )}
            </div>
          </>
        )}
      </Card>
    </div>
  );
}
