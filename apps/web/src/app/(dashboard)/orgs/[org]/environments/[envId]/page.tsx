import { EnvironmentView } from "@/components/environments/environment-view.tsx";
import { requireUser } from "@/server/auth/require-user.ts";
import { getQueryClient, HydrateClient, trpc } from "@/trpc/server.tsx";

export const dynamic = "force-dynamic";
export const metadata = { title: "Environment · Kiln" };

export default async function EnvironmentPage({ params }: { params: Promise<{ org: string; envId: string }> }) {
  const { org, envId } = await params;
  await requireUser(`/orgs/${org}/environments/${envId}`);
  const qc = getQueryClient();
  // A malformed or foreign id is the view's own "not found" state, not a server error.
  await Promise.allSettled([
    qc.prefetchQuery(trpc.environments.get.queryOptions({ org, environmentId: envId })),
    qc.prefetchQuery(trpc.deployments.list.queryOptions({ org, environmentId: envId })),
  ]);
  return (
    <HydrateClient>
      <EnvironmentView org={org} environmentId={envId} />
    </HydrateClient>
  );
}
