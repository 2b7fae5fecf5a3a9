import { ApiTokensView } from "@/components/settings/api-tokens-view.tsx";
import { requireUser } from "@/server/auth/require-user.ts";
import { HydrateClient } from "@/trpc/server.tsx";

export const dynamic = "force-dynamic";
export const metadata = { title: "API tokens · Kiln" };

export default async function OrgTokensPage({ params }: { params: Promise<{ org: string }> }) {
  const { org } = await params;
  await requireUser(`/orgs/${org}/settings/tokens`);
  // No server prefetch: the admin console fetches from the browser (and refreshes itself), so the
  // loading and error states tested in e2e/admin-console.test.ts are the ones users meet.
  return (
    <HydrateClient>
      <ApiTokensView org={org} />
    </HydrateClient>
  );
}
