"use client";
import { Field, Form, SelectField } from "@kiln/ui";
import { useMutation } from "@tanstack/react-query";
import { useRef, useState } from "react";
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
  const onSubmit = (data: FormData) => {
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
    <Form
      label="Add a schedule"
      id="add-schedule"
      testId="add-schedule-form"
      className="mt-4 border-t border-zinc-200 pt-4 dark:border-zinc-800"
      formRef={formRef}
      onSubmit={onSubmit}
      pending={add.isPending}
      submitLabel="Add schedule"
      pendingLabel="Adding…"
      error={errors.message}
    >
      <SelectField label="Repository" name="repo" className="w-64" error={errors.fields.repo}>
        {repos.map((r) => (
          <option key={r.id} value={r.id}>
            {r.full_name}
          </option>
        ))}
      </SelectField>
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
    </Form>
  );
}
