import { OverviewView } from "@/components/overview/overview-view.tsx";
import { requireUser } from "@/server/auth/require-user.ts";
import { getQueryClient, HydrateClient, trpc } from "@/trpc/server.tsx";

export const dynamic = "force-dynamic";
export const metadata = { title: "Overview · Kiln" };

export default async function OrgHomePage({ params }: { params: Promise<{ org: string }> }) {
  const { org } = await params;
  await requireUser(`/orgs/${org}`);
  await getQueryClient().prefetchQuery(trpc.runs.overview.queryOptions({ org }));
  return (
    <HydrateClient>
      <OverviewView org={org} />
    </HydrateClient>
  );
}
