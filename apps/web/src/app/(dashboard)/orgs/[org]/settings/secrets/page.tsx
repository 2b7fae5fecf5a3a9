import { SecretsView } from "@/components/secrets/secrets-view.tsx";
import { requireUser } from "@/server/auth/require-user.ts";
import { getQueryClient, HydrateClient, trpc } from "@/trpc/server.tsx";

export const dynamic = "force-dynamic";
export const metadata = { title: "Secrets · Kiln" };

export default async function OrgSecretsPage({ params }: { params: Promise<{ org: string }> }) {
  const { org } = await params;
  await requireUser(`/orgs/${org}/settings/secrets`);
  // A non-admin's prefetch fails quietly; the view then says who may manage secrets.
  await getQueryClient().prefetchQuery(trpc.secrets.list.queryOptions({ org }));
  return (
    <HydrateClient>
      <SecretsView org={org} />
    </HydrateClient>
  );
}
