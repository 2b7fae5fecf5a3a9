"use client";
import { Field, Form, SelectField } from "@kiln/ui";
import { useMutation } from "@tanstack/react-query";
import { useRef, useState } from "react";
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
  const onSubmit = (data: FormData) => {
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
    <Form
      label="Set a secret"
      testId="set-secret-form"
      autoComplete="off"
      className="mt-4 border-t border-zinc-200 pt-4 dark:border-zinc-800"
      formRef={formRef}
      onSubmit={onSubmit}
      pending={set.isPending}
      submitLabel="Save secret"
      pendingLabel="Saving…"
      error={errors.message}
      note={note}
    >
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
      <SelectField label="Scope" name="scope" className="w-48" defaultValue="org">
        <option value="org">Whole org</option>
        {repos.map((r) => (
          <option key={r.id} value={r.id}>
            {r.full_name}
          </option>
        ))}
      </SelectField>
      {/* A password input: not echoed, not autofilled, not kept by the browser's form history. */}
      <Field
        label="Value"
        name="value"
        type="password"
        autoComplete="new-password"
        spellCheck={false}
        className="w-72"
        hint="Write-only: it cannot be shown again"
        error={errors.fields.value}
      />
    </Form>
  );
}
