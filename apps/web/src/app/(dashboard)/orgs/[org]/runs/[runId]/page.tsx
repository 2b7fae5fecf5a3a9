import { RunView } from "@/components/run/run-view.tsx";
import { requireUser } from "@/server/auth/require-user.ts";
import { getQueryClient, HydrateClient, trpc } from "@/trpc/server.tsx";

export const dynamic = "force-dynamic";
export const metadata = { title: "Run · Kiln" };

export default async function RunPage({ params }: { params: Promise<{ org: string; runId: string }> }) {
  const { org, runId } = await params;
  await requireUser(`/orgs/${org}/runs/${runId}`);
  // Awaited so the first HTML has the run (the <200 ms figure in docs/adr/0010 is this response).
  await getQueryClient().prefetchQuery(trpc.runs.get.queryOptions({ org, runId }));
  return (
    <HydrateClient>
      <RunView org={org} runId={runId} />
    </HydrateClient>
  );
}
