import { EnvironmentsList } from "@/components/environments/environments-list.tsx";
import { requireUser } from "@/server/auth/require-user.ts";
import { getQueryClient, HydrateClient, trpc } from "@/trpc/server.tsx";

export const dynamic = "force-dynamic";
export const metadata = { title: "Environments · Kiln" };

export default async function EnvironmentsPage({ params }: { params: Promise<{ org: string }> }) {
  const { org } = await params;
  await requireUser(`/orgs/${org}/environments`);
  await getQueryClient().prefetchQuery(trpc.environments.list.queryOptions({ org }));
  return (
    <HydrateClient>
      <EnvironmentsList org={org} />
    </HydrateClient>
  );
}
