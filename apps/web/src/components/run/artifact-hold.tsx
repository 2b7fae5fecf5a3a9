"use client";
import { Button, inputClasses } from "@kiln/ui";
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { useId, useState } from "react";
import { useTRPC } from "@/trpc/client.tsx";
import { useOrg } from "../org-context.tsx";

/**
 * Place or lift a retention hold on one artifact (issue 21): admins and auditors only, as the server
 * enforces in the tenant query. A hold needs a reason; both are audited. The run page's poll shows
 * the result; errors stay next to the control.
 */
export function ArtifactHold(p: { runId: string; artifactId: string; name: string; held: boolean; expired: boolean }) {
  const trpc = useTRPC();
  const qc = useQueryClient();
  const { slug, role } = useOrg();
  const [open, setOpen] = useState(false);
  const [reason, setReason] = useState("");
  const [error, setError] = useState<string | null>(null);
  const inputId = useId();
  const refresh = () => qc.invalidateQueries({ queryKey: trpc.runs.get.queryKey({ org: slug, runId: p.runId }) });
  const add = useMutation(
    trpc.retention.addHold.mutationOptions({
      onMutate: () => setError(null),
      onSuccess: () => {
        setOpen(false);
        setReason("");
      },
      onError: (e) => setError(`Could not hold: ${e.message}`),
      onSettled: refresh,
    }),
  );
  const remove = useMutation(
    trpc.retention.removeHold.mutationOptions({
      onMutate: () => setError(null),
      onError: (e) => setError(`Could not lift the hold: ${e.message}`),
      onSettled: refresh,
    }),
  );
  if (p.expired || (role !== "admin" && role !== "auditor")) return null;
  const busy = add.isPending || remove.isPending;
  return (
    <span className="ml-2 inline-flex flex-col gap-1" data-testid="artifact-hold">
      {p.held ? (
        <Button
          size="sm"
          disabled={busy}
          onClick={() => remove.mutate({ org: slug, artifactId: p.artifactId })}
          aria-label={`Lift the retention hold on ${p.name}`}
        >
          {remove.isPending ? "Lifting…" : "Lift hold"}
        </Button>
      ) : open ? (
        <form
          className="flex items-center gap-1"
          onSubmit={(e) => {
            e.preventDefault();
            add.mutate({ org: slug, artifactId: p.artifactId, reason });
          }}
        >
          <label htmlFor={inputId} className="sr-only">
            Reason for holding {p.name}
          </label>
          <input
            id={inputId}
            className={`${inputClasses} h-7 w-40 text-xs`}
            value={reason}
            onChange={(e) => setReason(e.target.value)}
            placeholder="reason (audited)"
            required
            maxLength={2000}
            autoFocus
            onKeyDown={(e) => {
              if (e.key === "Escape") setOpen(false);
            }}
          />
          <Button size="sm" type="submit" disabled={busy || reason.trim().length === 0}>
            {add.isPending ? "Holding…" : "Hold"}
          </Button>
          <Button size="sm" type="button" onClick={() => setOpen(false)}>
            Cancel
          </Button>
        </form>
      ) : (
        <Button size="sm" onClick={() => setOpen(true)} aria-label={`Hold ${p.name} past its expiry`}>
          Hold…
        </Button>
      )}
      {error ? (
        <span role="alert" className="text-xs text-red-700 dark:text-red-400">
          {error}
        </span>
      ) : null}
    </span>
  );
}
