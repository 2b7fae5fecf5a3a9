"use client";
import { Button, ConfirmButton } from "@kiln/ui";
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { useRouter } from "next/navigation";
import { useState } from "react";
import { useTRPC } from "@/trpc/client.tsx";
import { canOperate, useOrg } from "../org-context.tsx";
import type { RunPageData } from "../types.ts";

/**
 * Cancel and retry. Cancel is optimistic: the page shows "cancelling" (and the jobs that had not
 * started as cancelled) at once, then the poll replaces that with what the server decided; on error
 * the previous state comes back with the reason. Retry navigates to the new run when it exists.
 */
export function RunActions({ data }: { data: RunPageData }) {
  const trpc = useTRPC();
  const qc = useQueryClient();
  const router = useRouter();
  const { slug, role } = useOrg();
  const [error, setError] = useState<string | null>(null);
  const run = data.run;
  const key = trpc.runs.get.queryKey({ org: slug, runId: run.id });

  const cancel = useMutation(
    trpc.runs.cancel.mutationOptions({
      onMutate: async () => {
        setError(null);
        await qc.cancelQueries({ queryKey: key });
        const before = qc.getQueryData(key);
        qc.setQueryData(key, (d) => (d ? optimisticCancel(d) : d));
        return { before };
      },
      onError: (e, _v, ctx) => {
        if (ctx?.before) qc.setQueryData(key, ctx.before);
        setError(`Could not cancel: ${e.message}`);
      },
      onSettled: () => qc.invalidateQueries({ queryKey: key }),
    }),
  );
  const retry = useMutation(
    trpc.runs.retry.mutationOptions({
      onMutate: () => setError(null),
      onSuccess: (r) => router.push(`/orgs/${slug}/runs/${r.runId}`),
      onError: (e) => setError(`Could not retry: ${e.message}`),
    }),
  );
  const rerunFailed = useMutation(
    trpc.runs.rerunFailed.mutationOptions({
      onMutate: () => setError(null),
      onSuccess: (r) => router.push(`/orgs/${slug}/runs/${r.runId}`),
      onError: (e) => setError(`Could not re-run the failed jobs: ${e.message}`),
    }),
  );
  // Only a frozen run with a job that did not succeed has anything to re-run (issue 20).
  const failedJobs = run.jobs.filter((j) => j.status === "completed" && j.outcome !== "success").length;

  const allowed = canOperate(role);
  const why = allowed ? undefined : "Auditors can view runs but not cancel, retry or re-run them";
  const live = run.status === "pending" || run.status === "running";
  return (
    <div className="flex flex-col items-end gap-2">
      <div className="flex items-center gap-2">
        {live ? (
          <ConfirmButton
            label="Cancel run"
            size="md"
            disabled={!allowed || cancel.isPending}
            title="Cancel this run?"
            triggerTitle={why}
            confirmLabel="Confirm cancel"
            cancelLabel="Keep running"
            // The optimistic update shows the cancel at once; a refusal is shown by onError.
            onConfirm={async () => cancel.mutate({ org: slug, runId: run.id })}
          >
            Its running steps are stopped and its pending jobs never start.
          </ConfirmButton>
        ) : null}
        {run.status === "completed" && failedJobs > 0 ? (
          <Button
            variant="secondary"
            disabled={!allowed || rerunFailed.isPending || retry.isPending}
            title={
              why ?? `Pins the jobs that succeeded and runs the ${failedJobs} that did not, with their descendants`
            }
            onClick={() => rerunFailed.mutate({ org: slug, runId: run.id })}
          >
            {rerunFailed.isPending ? "Starting re-run…" : "Re-run failed jobs"}
          </Button>
        ) : null}
        {run.status === "completed" ? (
          <Button
            variant="primary"
            disabled={!allowed || retry.isPending || rerunFailed.isPending}
            title={why}
            onClick={() => retry.mutate({ org: slug, runId: run.id })}
          >
            {retry.isPending ? "Starting retry…" : "Retry run"}
          </Button>
        ) : null}
      </div>
      {!allowed ? <p className="text-xs text-zinc-500 dark:text-zinc-400">{why}.</p> : null}
      {error ? (
        <p role="alert" className="text-sm text-red-700 dark:text-red-400">
          {error}
        </p>
      ) : null}
    </div>
  );
}

function optimisticCancel(d: RunPageData): RunPageData {
  const pendingRun = d.run.status === "pending";
  return {
    ...d,
    run: {
      ...d.run,
      status: pendingRun ? "completed" : "cancelling",
      outcome: pendingRun ? "cancelled" : d.run.outcome,
      jobs: d.run.jobs.map((j) =>
        j.status === "pending" || j.status === "ready"
          ? { ...j, status: "completed", outcome: "cancelled", cause: "run.cancelled" }
          : j,
      ),
    },
    outcome_class: pendingRun ? "cancelled" : d.outcome_class,
    job_classes: Object.fromEntries(
      d.run.jobs.map((j) => [
        j.id,
        j.status === "pending" || j.status === "ready" ? "cancelled" : (d.job_classes[j.id] ?? null),
      ]),
    ),
  };
}
