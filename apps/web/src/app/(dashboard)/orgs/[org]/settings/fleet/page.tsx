import { FleetView } from "@/components/fleet/fleet-view.tsx";
import { requireUser } from "@/server/auth/require-user.ts";
import { HydrateClient } from "@/trpc/server.tsx";

export const dynamic = "force-dynamic";
export const metadata = { title: "Fleet · Kiln" };

export default async function OrgFleetPage({ params }: { params: Promise<{ org: string }> }) {
  const { org } = await params;
  await requireUser(`/orgs/${org}/settings/fleet`);
  // No server prefetch: the page fetches from the browser and refreshes itself every few seconds,
  // so its loading and error states are the ones users meet (as the admin console's).
  return (
    <HydrateClient>
      <FleetView org={org} />
    </HydrateClient>
  );
}
