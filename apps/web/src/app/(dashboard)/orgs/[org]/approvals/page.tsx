import { ApprovalsInbox } from "@/components/environments/approvals-inbox.tsx";
import { requireUser } from "@/server/auth/require-user.ts";
import { getQueryClient, HydrateClient, trpc } from "@/trpc/server.tsx";

export const dynamic = "force-dynamic";
export const metadata = { title: "Approvals · Kiln" };

export default async function ApprovalsPage({ params }: { params: Promise<{ org: string }> }) {
  const { org } = await params;
  await requireUser(`/orgs/${org}/approvals`);
  await getQueryClient().prefetchQuery(trpc.promotions.inbox.queryOptions({ org }));
  return (
    <HydrateClient>
      <ApprovalsInbox org={org} />
    </HydrateClient>
  );
}
