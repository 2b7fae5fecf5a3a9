import { SettingsView } from "@/components/settings/settings-view.tsx";
import { requireUser } from "@/server/auth/require-user.ts";
import { getQueryClient, HydrateClient, trpc } from "@/trpc/server.tsx";

export const dynamic = "force-dynamic";
export const metadata = { title: "Settings · Kiln" };

export default async function OrgSettingsPage({ params }: { params: Promise<{ org: string }> }) {
  const { org } = await params;
  await requireUser(`/orgs/${org}/settings`);
  await getQueryClient().prefetchQuery(trpc.tenants.settings.queryOptions({ org }));
  return (
    <HydrateClient>
      <SettingsView org={org} />
    </HydrateClient>
  );
}
