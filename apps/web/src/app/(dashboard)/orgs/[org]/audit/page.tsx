import { AuditView } from "@/components/audit/audit-view.tsx";
import { requireUser } from "@/server/auth/require-user.ts";
import { getQueryClient, HydrateClient, trpc } from "@/trpc/server.tsx";

export const dynamic = "force-dynamic";
export const metadata = { title: "Audit trail · Kiln" };

export default async function OrgAuditPage({ params }: { params: Promise<{ org: string }> }) {
  const { org } = await params;
  await requireUser(`/orgs/${org}/audit`);
  await getQueryClient().prefetchQuery(trpc.audit.list.queryOptions({ org }));
  return (
    <HydrateClient>
      <AuditView org={org} />
    </HydrateClient>
  );
}
