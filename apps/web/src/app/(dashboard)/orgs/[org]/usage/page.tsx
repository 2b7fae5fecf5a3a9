import { UsageView } from "@/components/usage/usage-view.tsx";
import { requireUser } from "@/server/auth/require-user.ts";
import { getQueryClient, HydrateClient, trpc } from "@/trpc/server.tsx";

export const dynamic = "force-dynamic";
export const metadata = { title: "Usage · Kiln" };

export default async function OrgUsagePage({ params }: { params: Promise<{ org: string }> }) {
  const { org } = await params;
  await requireUser(`/orgs/${org}/usage`);
  await getQueryClient().prefetchQuery(trpc.usage.get.queryOptions({ org }));
  return (
    <HydrateClient>
      <UsageView org={org} />
    </HydrateClient>
  );
}
