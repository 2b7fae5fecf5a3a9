import { FlakyJobsView } from "@/components/flaky/flaky-jobs-view.tsx";
import { requireUser } from "@/server/auth/require-user.ts";
import { getQueryClient, HydrateClient, trpc } from "@/trpc/server.tsx";

export const dynamic = "force-dynamic";
export const metadata = { title: "Flaky jobs · Kiln" };

export default async function FlakyPage({
  params,
  searchParams,
}: {
  params: Promise<{ org: string }>;
  searchParams: Promise<Record<string, string | string[] | undefined>>;
}) {
  const { org } = await params;
  const sp = await searchParams;
  await requireUser(`/orgs/${org}/flaky`);
  await getQueryClient().prefetchQuery(trpc.runs.repos.queryOptions({ org }));
  return (
    <HydrateClient>
      <FlakyJobsView org={org} repoParam={typeof sp.repo === "string" ? sp.repo : null} />
    </HydrateClient>
  );
}
