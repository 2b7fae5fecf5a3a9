"use client";
import { Button, Field, inputClasses } from "@kiln/ui";
import { useMutation } from "@tanstack/react-query";
import { useId, useRef, useState, type FormEvent } from "react";
import { useTRPC } from "@/trpc/client.tsx";
import { formErrorsOf, NO_ERRORS, type FormErrors } from "../settings/form-errors.ts";

/**
 * Sets (or replaces, as a new version) one secret. The value field is a password input that is
 * cleared on success and never filled from the server: there is nothing to fill it from.
 */
export function SetSecretForm({
  org,
  repos,
  onSaved,
}: {
  org: string;
  repos: { id: string; full_name: string }[];
  onSaved: () => Promise<void>;
}) {
  const trpc = useTRPC();
  const formRef = useRef<HTMLFormElement>(null);
  const scopeId = useId();
  const valueId = useId();
  const [errors, setErrors] = useState<FormErrors>(NO_ERRORS);
  const [note, setNote] = useState<string | null>(null);
  const set = useMutation(
    trpc.secrets.set.mutationOptions({
      onMutate: () => {
        setErrors(NO_ERRORS);
        setNote(null);
      },
      onSuccess: async (r) => {
        await onSaved();
        formRef.current?.reset();
        setNote(`Saved ${r.name} as version ${r.version}. Jobs started from now on receive it.`);
      },
      onError: (e) => {
        const f = formErrorsOf(e);
        const code = e.data?.domainCode;
        setErrors(code === "SECRET.INVALID_NAME" && f.message ? { fields: { name: f.message }, message: null } : f);
      },
    }),
  );
  const onSubmit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const data = new FormData(e.currentTarget);
    const name = String(data.get("name") ?? "").trim();
    const value = String(data.get("value") ?? "");
    const scope = String(data.get("scope") ?? "org");
    const fields: Record<string, string> = {};
    if (!name) fields.name = "enter a name";
    if (!value) fields.value = "enter a value";
    if (Object.keys(fields).length > 0) return setErrors({ fields, message: null });
    set.mutate({ org, name, value, repoId: scope === "org" ? null : scope });
  };
  return (
    <form
      ref={formRef}
      noValidate
      onSubmit={onSubmit}
      autoComplete="off"
      className="mt-4 border-t border-zinc-200 pt-4 dark:border-zinc-800"
      data-testid="set-secret-form"
    >
      <div className="flex flex-wrap items-start gap-3">
        <Field
          label="Name"
          name="name"
          autoComplete="off"
          spellCheck={false}
          placeholder="DEPLOY_TOKEN"
          className="w-56"
          hint="Becomes the variable's name in the step"
          error={errors.fields.name}
        />
        <div className="flex w-48 flex-col gap-1">
          <label htmlFor={scopeId} className="text-xs font-medium text-zinc-700 dark:text-zinc-300">
            Scope
          </label>
          <select id={scopeId} name="scope" className={inputClasses} defaultValue="org">
            <option value="org">Whole org</option>
            {repos.map((r) => (
              <option key={r.id} value={r.id}>
                {r.full_name}
              </option>
            ))}
          </select>
        </div>
        <div className="flex w-72 flex-col gap-1">
          <label htmlFor={valueId} className="text-xs font-medium text-zinc-700 dark:text-zinc-300">
            Value
          </label>
          {/* A password input: not echoed, not autofilled, not kept by the browser's form history. */}
          <input
            id={valueId}
            name="value"
            type="password"
            autoComplete="new-password"
            spellCheck={false}
            aria-invalid={errors.fields.value ? true : undefined}
            aria-describedby={`${valueId}-hint${errors.fields.value ? ` ${valueId}-error` : ""}`}
            className={inputClasses}
          />
          <p id={`${valueId}-hint`} className="text-xs text-zinc-500 dark:text-zinc-400">
            Write-only: it cannot be shown again
          </p>
          {errors.fields.value ? (
            <p id={`${valueId}-error`} className="text-xs text-red-700 dark:text-red-400">
              {errors.fields.value}
            </p>
          ) : null}
        </div>
        <Button type="submit" variant="primary" className="mt-5" disabled={set.isPending}>
          {set.isPending ? "Saving…" : "Save secret"}
        </Button>
      </div>
      {errors.message ? (
        <p role="alert" className="mt-2 text-sm text-red-700 dark:text-red-400">
          {errors.message}
        </p>
      ) : null}
      <p role="status" className="mt-2 text-sm text-emerald-700 dark:text-emerald-400">
        {note ?? ""}
      </p>
    </form>
  );
}
