"use client";
import { Button, Field, inputClasses } from "@kiln/ui";
import { useMutation } from "@tanstack/react-query";
import { useId, useRef, useState, type FormEvent } from "react";
import { useTRPC } from "@/trpc/client.tsx";
import { formErrorsOf, NO_ERRORS, type FormErrors } from "../settings/form-errors.ts";

/** Adds a schedule (audited). The domain checks the cron and zone; its message lands under the field it is about. */
export function AddScheduleForm({
  org,
  repos,
  onAdded,
}: {
  org: string;
  repos: { id: string; full_name: string }[];
  onAdded: (message: string) => Promise<void>;
}) {
  const trpc = useTRPC();
  const formRef = useRef<HTMLFormElement>(null);
  const repoId = useId();
  const [errors, setErrors] = useState<FormErrors>(NO_ERRORS);
  const add = useMutation(
    trpc.schedules.add.mutationOptions({
      onMutate: () => setErrors(NO_ERRORS),
      onSuccess: async (s) => {
        formRef.current?.reset();
        await onAdded(`Added ${s.cron} (${s.timezone}) on ${s.repo}.`);
      },
      onError: (e) => {
        const f = formErrorsOf(e);
        const field =
          (e.data as { domainCode?: string } | undefined)?.domainCode === "SCHEDULE.INVALID"
            ? /time zone/.test(f.message ?? "")
              ? "timezone"
              : "cron"
            : null;
        setErrors(field && f.message ? { fields: { [field]: f.message }, message: null } : f);
      },
    }),
  );
  const onSubmit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const data = new FormData(e.currentTarget);
    const cron = String(data.get("cron") ?? "").trim();
    const timezone = String(data.get("timezone") ?? "").trim() || "UTC";
    const repo = String(data.get("repo") ?? "");
    if (!repo) return setErrors({ fields: { repo: "choose a repository" }, message: null });
    if (!cron) return setErrors({ fields: { cron: "enter a cron expression" }, message: null });
    add.mutate({ org, repoId: repo, cron, timezone });
  };
  if (repos.length === 0)
    return <p className="mt-4 text-sm text-zinc-500">This org has no repositories to schedule yet.</p>;
  return (
    <form
      ref={formRef}
      noValidate
      onSubmit={onSubmit}
      id="add-schedule"
      className="mt-4 border-t border-zinc-200 pt-4 dark:border-zinc-800"
      data-testid="add-schedule-form"
    >
      <div className="flex flex-wrap items-start gap-3">
        <div className="flex w-64 flex-col gap-1">
          <label htmlFor={repoId} className="text-xs font-medium text-zinc-700 dark:text-zinc-300">
            Repository
          </label>
          <select id={repoId} name="repo" className={inputClasses} aria-invalid={errors.fields.repo ? true : undefined}>
            {repos.map((r) => (
              <option key={r.id} value={r.id}>
                {r.full_name}
              </option>
            ))}
          </select>
        </div>
        <Field
          label="Cron"
          name="cron"
          autoComplete="off"
          spellCheck={false}
          placeholder="0 3 * * *"
          className="w-48"
          hint="minute hour day month weekday"
          error={errors.fields.cron}
        />
        <Field
          label="Time zone"
          name="timezone"
          autoComplete="off"
          spellCheck={false}
          placeholder="UTC"
          className="w-48"
          hint="IANA name, e.g. Europe/Berlin"
          error={errors.fields.timezone}
        />
        <Button type="submit" variant="primary" className="mt-5" disabled={add.isPending}>
          {add.isPending ? "Adding…" : "Add schedule"}
        </Button>
      </div>
      {errors.message ? (
        <p role="alert" className="mt-2 text-sm text-red-700 dark:text-red-400">
          {errors.message}
        </p>
      ) : null}
    </form>
  );
}
