import { SchedulesView } from "@/components/schedules/schedules-view.tsx";
import { requireUser } from "@/server/auth/require-user.ts";
import { getQueryClient, HydrateClient, trpc } from "@/trpc/server.tsx";

export const dynamic = "force-dynamic";
export const metadata = { title: "Schedules · Kiln" };

export default async function SchedulesPage({ params }: { params: Promise<{ org: string }> }) {
  const { org } = await params;
  await requireUser(`/orgs/${org}/schedules`);
  await getQueryClient().prefetchQuery(trpc.schedules.list.queryOptions({ org }));
  return (
    <HydrateClient>
      <SchedulesView org={org} />
    </HydrateClient>
  );
}
