import { MembersView } from "@/components/admin/members-view.tsx";
import { requireUser } from "@/server/auth/require-user.ts";
import { HydrateClient } from "@/trpc/server.tsx";

export const dynamic = "force-dynamic";
export const metadata = { title: "Members · Kiln" };

export default async function OrgMembersPage({ params }: { params: Promise<{ org: string }> }) {
  const { org } = await params;
  await requireUser(`/orgs/${org}/settings/members`);
  // No server prefetch: the admin console fetches from the browser (and refreshes itself), so the
  // loading and error states tested in e2e/admin-console.test.ts are the ones users meet.
  return (
    <HydrateClient>
      <MembersView org={org} />
    </HydrateClient>
  );
}
