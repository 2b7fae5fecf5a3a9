import { Suspense } from "react";
import { filtersFrom } from "@/components/runs/run-filter-schema.ts";
import { RunsListView } from "@/components/runs/runs-list-view.tsx";
import { requireUser } from "@/server/auth/require-user.ts";
import { getQueryClient, HydrateClient, trpc } from "@/trpc/server.tsx";

export const dynamic = "force-dynamic";
export const metadata = { title: "Runs · Kiln" };

export default async function RunsPage({
  params,
  searchParams,
}: {
  params: Promise<{ org: string }>;
  searchParams: Promise<Record<string, string | string[] | undefined>>;
}) {
  const { org } = await params;
  await requireUser(`/orgs/${org}/runs`);
  const filters = filtersFrom(await searchParams);
  const qc = getQueryClient();
  await Promise.all([
    qc.prefetchInfiniteQuery({
      ...trpc.runs.list.infiniteQueryOptions({ org, filters, limit: 25 }, { getNextPageParam: (p) => p.next_cursor }),
    }),
    qc.prefetchQuery(trpc.runs.repos.queryOptions({ org })),
  ]);
  return (
    <HydrateClient>
      <Suspense>
        <RunsListView org={org} />
      </Suspense>
    </HydrateClient>
  );
}
