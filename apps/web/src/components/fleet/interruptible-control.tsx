"use client";
import { Button, Field } from "@kiln/ui";
import { useMutation } from "@tanstack/react-query";
import { useState, type FormEvent } from "react";
import { useTRPC } from "@/trpc/client.tsx";
import { serverError } from "./server-error.ts";

/**
 * The interruptible flag of one org pool (fleet.setInterruptible, admins of the owning org; the
 * engine scopes the update to the org's pools): mark it interruptible with the on-demand pool whose
 * background work it takes, or clear it. Opens inline; Escape closes it.
 */
export function InterruptibleControl({
  org,
  pool,
  interruptible,
  serves,
  onChanged,
}: {
  org: string;
  pool: string;
  interruptible: boolean;
  serves: string | null;
  onChanged: (message: string) => Promise<void>;
}) {
  const trpc = useTRPC();
  const [open, setOpen] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const set = useMutation(
    trpc.fleet.setInterruptible.mutationOptions({
      onMutate: () => setError(null),
      onSuccess: async (r) => {
        setOpen(false);
        await onChanged(
          r.interruptible ? `${r.pool} is interruptible, serving ${r.serves ?? "–"}.` : `${r.pool} is on-demand again.`,
        );
      },
      onError: (e) => setError(serverError(e)),
    }),
  );
  if (!open)
    return (
      <div className="flex gap-2">
        <Button size="sm" onClick={() => setOpen(true)} aria-label={`Interruptible settings of ${pool}`}>
          {interruptible ? "Change" : "Make interruptible"}
        </Button>
        {interruptible ? (
          <Button
            size="sm"
            disabled={set.isPending}
            onClick={() => set.mutate({ org, pool, interruptible: false, serves: null })}
            aria-label={`Clear the interruptible flag of ${pool}`}
          >
            Clear
          </Button>
        ) : null}
        {error ? (
          <p role="alert" className="text-xs text-red-700 dark:text-red-400">
            {error}
          </p>
        ) : null}
      </div>
    );
  const onSubmit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const target = String(new FormData(e.currentTarget).get("serves") ?? "").trim();
    if (!target) return setError("name the on-demand pool it serves");
    set.mutate({ org, pool, interruptible: true, serves: target });
  };
  return (
    <form
      noValidate
      onSubmit={onSubmit}
      onKeyDown={(e) => {
        if (e.key === "Escape") setOpen(false);
      }}
      aria-label={`Make ${pool} interruptible`}
      className="flex flex-wrap items-start gap-2"
    >
      <Field
        label={`On-demand pool ${pool} serves`}
        name="serves"
        defaultValue={serves ?? ""}
        autoComplete="off"
        spellCheck={false}
        placeholder="default"
        // Opened on purpose from its button: the field is where the keyboard goes next.
        autoFocus
        error={error}
        className="w-56"
      />
      <Button type="submit" variant="primary" className="mt-5" disabled={set.isPending}>
        {set.isPending ? "Saving…" : "Save"}
      </Button>
      <Button variant="secondary" className="mt-5" onClick={() => setOpen(false)}>
        Cancel
      </Button>
    </form>
  );
}
