import { ApiTokensView } from "@/components/settings/api-tokens-view.tsx";
import { requireUser } from "@/server/auth/require-user.ts";
import { getQueryClient, HydrateClient, trpc } from "@/server/trpc/server.tsx";

export const dynamic = "force-dynamic";
export const metadata = { title: "API tokens · Kiln" };

export default async function OrgTokensPage({ params }: { params: Promise<{ org: string }> }) {
  const { org } = await params;
  await requireUser(`/orgs/${org}/settings/tokens`);
  // A non-admin's prefetch fails quietly; the view then shows the server's refusal.
  await getQueryClient().prefetchQuery(trpc.tokens.list.queryOptions({ org }));
  return (
    <HydrateClient>
      <ApiTokensView org={org} />
    </HydrateClient>
  );
}
