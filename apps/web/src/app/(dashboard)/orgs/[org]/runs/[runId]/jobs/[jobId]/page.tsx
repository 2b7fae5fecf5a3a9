import { JobLogView } from "@/components/job/job-log-view.tsx";
import { requireUser } from "@/server/auth/require-user.ts";
import { getQueryClient, HydrateClient, trpc } from "@/trpc/server.tsx";

export const dynamic = "force-dynamic";
export const metadata = { title: "Job log · Kiln" };

export default async function JobPage({ params }: { params: Promise<{ org: string; runId: string; jobId: string }> }) {
  const { org, runId, jobId } = await params;
  await requireUser(`/orgs/${org}/runs/${runId}/jobs/${jobId}`);
  await getQueryClient().prefetchQuery(trpc.jobs.get.queryOptions({ org, runId, jobId }));
  return (
    <HydrateClient>
      <JobLogView org={org} runId={runId} jobId={jobId} />
    </HydrateClient>
  );
}
