"use client";
import { Card, Field, Form, Notice } from "@kiln/ui";
import { useMutation, useQueryClient } from "@tanstack/react-query";
import Link from "next/link";
import { useState } from "react";
import { useTRPC } from "@/trpc/client.tsx";
import { RelativeTime } from "../time.tsx";

interface LockView {
  run_id: string;
  job_id: string | null;
  attempt_id: string | null;
  epoch: number | null;
  acquired_at: string;
  release_after: string | null;
  manual_release: boolean;
  state: "held_running" | "kill_bound_pending" | "manual_release_required";
  why: string;
}

/**
 * The environment's deployment lock (ADR 0033): free, or its holder and why it is still held. Only
 * a lock no proof of death exists for (an org-owned host) offers the admin's manual release.
 */
export function DeploymentLockCard({
  org,
  environmentId,
  lock,
  isAdmin,
  now,
}: {
  org: string;
  environmentId: string;
  lock: LockView | null;
  isAdmin: boolean;
  now: number;
}) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const [reason, setReason] = useState("");
  const [error, setError] = useState<string | null>(null);
  const release = useMutation(
    trpc.deployments.releaseLock.mutationOptions({
      onMutate: () => setError(null),
      onSuccess: () =>
        queryClient.invalidateQueries({ queryKey: trpc.deployments.list.queryKey({ org, environmentId }) }),
      onError: (e) => setError(e.message),
    }),
  );
  return (
    <Card title="Deployment lock" id="deployment-lock">
      {lock === null ? (
        <p className="text-sm" data-testid="lock-state" data-state="free">
          Free: the next deployment starts as soon as the pointer moves.
        </p>
      ) : (
        <div className="space-y-2 text-sm" data-testid="lock-state" data-state={lock.state}>
          <p>
            Held by deploy run{" "}
            <Link
              className="font-mono text-blue-700 hover:underline dark:text-blue-400"
              href={`/orgs/${org}/runs/${lock.run_id}`}
            >
              {lock.run_id.slice(0, 8)}
            </Link>
            {lock.attempt_id ? ` (attempt ${lock.epoch ?? "?"})` : " (not yet claimed)"} since{" "}
            <RelativeTime iso={lock.acquired_at} now={now} />.
          </p>
          <p className="text-zinc-700 dark:text-zinc-300" data-testid="lock-why">
            {lock.why}
          </p>
          {lock.manual_release && isAdmin ? (
            <Form
              label="Release the deployment lock"
              onSubmit={() => release.mutate({ org, environmentId, reason })}
              pending={release.isPending}
              disabled={reason.trim() === ""}
              submitLabel="Release lock"
              pendingLabel="Releasing…"
              submitVariant="danger"
              error={error}
            >
              <Field
                label="Why it is safe to release"
                name="reason"
                required
                maxLength={2000}
                value={reason}
                onChange={(e) => setReason(e.target.value)}
                className="min-w-64 flex-1"
              />
            </Form>
          ) : error ? (
            <Notice tone="error">{error}</Notice>
          ) : null}
        </div>
      )}
    </Card>
  );
}
