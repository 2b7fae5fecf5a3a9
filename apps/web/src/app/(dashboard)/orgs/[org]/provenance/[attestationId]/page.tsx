import { ProvenanceRecordView } from "@/components/provenance/provenance-record.tsx";
import { requireUser } from "@/server/auth/require-user.ts";
import { getQueryClient, HydrateClient, trpc } from "@/trpc/server.tsx";

export const dynamic = "force-dynamic";
export const metadata = { title: "Provenance record · Kiln" };

export default async function ProvenanceRecordPage({
  params,
}: {
  params: Promise<{ org: string; attestationId: string }>;
}) {
  const { org, attestationId } = await params;
  await requireUser(`/orgs/${org}/provenance/${attestationId}`);
  // A malformed id is the client's NOT_FOUND state; prefetch only what can exist.
  if (/^[0-9a-f-]{36}$/i.test(attestationId))
    await getQueryClient().prefetchQuery(trpc.provenance.record.queryOptions({ org, attestationId }));
  return (
    <HydrateClient>
      <ProvenanceRecordView org={org} attestationId={attestationId} />
    </HydrateClient>
  );
}
