"use client";
import { Button, Field } from "@kiln/ui";
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { useState, type FormEvent } from "react";
import { useTRPC } from "@/trpc/client.tsx";
import { serverError, ServerErrorText } from "./server-error.tsx";

/**
 * Break glass (admins): override the failing overridable gates of a pending promotion, with a reason
 * and an expiry. On production the first admin's override waits for a second admin; the answer says so.
 */
export function OverrideForm({ org, promotionId }: { org: string; promotionId: string }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const [open, setOpen] = useState(false);
  const [error, setError] = useState<{ code: string; message: string } | null>(null);
  const [outcome, setOutcome] = useState<string | null>(null);
  const override = useMutation(
    trpc.promotions.override.mutationOptions({
      onMutate: () => {
        setError(null);
        setOutcome(null);
      },
      onSuccess: async (p) => {
        const last = p.overrides[0];
        setOutcome(
          last?.secondApproverRequired && last.state === "pending"
            ? "Override recorded: a second admin must override too before it applies."
            : `Override applied; the promotion is ${p.state.replace("_", " ")}.`,
        );
        await queryClient.invalidateQueries({ queryKey: trpc.promotions.inbox.queryKey({ org }) });
        await queryClient.invalidateQueries({ queryKey: trpc.promotions.overrides.queryKey({ org }) });
      },
      onError: (e) => setError(serverError(e)),
    }),
  );
  const onSubmit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const fd = new FormData(e.currentTarget);
    const reason = String(fd.get("reason") ?? "").trim();
    const local = String(fd.get("expiresAt") ?? "");
    // datetime-local is the browser's local time without an offset: the Date reads it as such.
    const at = local ? new Date(local) : null;
    if (!reason) return setError({ code: "REQUEST.INVALID", message: "enter the reason for the override" });
    if (!at || Number.isNaN(at.getTime()))
      return setError({ code: "OVERRIDE.INVALID_EXPIRY", message: "choose when the override expires" });
    override.mutate({ org, promotionId, reason, expiresAt: at.toISOString() });
  };
  if (!open)
    return (
      <div>
        <Button variant="danger" onClick={() => setOpen(true)} aria-expanded={false}>
          Override (break glass)
        </Button>
        {outcome ? (
          <p role="status" className="mt-2 text-sm text-amber-800 dark:text-amber-300">
            {outcome}
          </p>
        ) : null}
      </div>
    );
  return (
    <form
      noValidate
      onSubmit={onSubmit}
      aria-label="Override (break glass)"
      className="space-y-2 rounded-md border border-red-200 p-3 dark:border-red-900"
    >
      <p className="text-sm font-medium text-red-800 dark:text-red-300">Override (break glass)</p>
      <div className="grid gap-3 sm:grid-cols-2">
        <Field label="Override reason" name="reason" maxLength={2000} autoComplete="off" />
        <Field label="Expires at" name="expiresAt" type="datetime-local" hint="At most 7 days away" />
      </div>
      <div className="flex gap-2">
        <Button type="submit" variant="danger" disabled={override.isPending}>
          {override.isPending ? "Overriding…" : "Override gates"}
        </Button>
        <Button type="button" onClick={() => setOpen(false)}>
          Cancel
        </Button>
      </div>
      {error ? <ServerErrorText error={error} /> : null}
      {outcome ? (
        <p role="status" className="text-sm text-amber-800 dark:text-amber-300">
          {outcome}
        </p>
      ) : null}
    </form>
  );
}
