"use client";
import { Field, Form, SelectField } from "@kiln/ui";
import { ROLES, type Role } from "@kiln/domain";
import { useMutation } from "@tanstack/react-query";
import { useRef, useState } from "react";
import { useTRPC } from "@/trpc/client.tsx";
import { formErrorsOf, NO_ERRORS, numberOrNull, type FormErrors } from "./form-errors.ts";

export interface CreatedToken {
  name: string;
  token: string;
  expiresAt: string;
}

/** Create an API token with a role and an expiry (1-366 days). The secret goes to `onCreated` once. */
export function CreateTokenForm({ org, onCreated }: { org: string; onCreated: (t: CreatedToken) => Promise<void> }) {
  const trpc = useTRPC();
  const formRef = useRef<HTMLFormElement>(null);
  const [errors, setErrors] = useState<FormErrors>(NO_ERRORS);
  const create = useMutation(
    trpc.tokens.create.mutationOptions({
      onMutate: () => setErrors(NO_ERRORS),
      onSuccess: async (t) => {
        formRef.current?.reset();
        await onCreated({ name: t.name, token: t.token, expiresAt: t.expiresAt });
      },
      onError: (e) => {
        const f = formErrorsOf(e);
        setErrors(f.message && /expiry/.test(f.message) ? { fields: { expiresInDays: f.message }, message: null } : f);
      },
    }),
  );
  const onSubmit = (fd: FormData) => {
    const name = String(fd.get("name") ?? "").trim();
    const days = numberOrNull(fd.get("expiresInDays"));
    if (!name) return setErrors({ fields: { name: "enter a name" }, message: null });
    if (days === null || !Number.isInteger(days))
      return setErrors({ fields: { expiresInDays: "enter a whole number of days" }, message: null });
    create.mutate({ org, name, role: String(fd.get("role")) as Role, expiresInDays: days });
  };
  return (
    <Form
      label="Create an API token"
      title="Create a token"
      testId="create-token-form"
      className="mt-4 border-t border-zinc-200 pt-4 dark:border-zinc-800"
      formRef={formRef}
      onSubmit={onSubmit}
      pending={create.isPending}
      submitLabel="Create token"
      pendingLabel="Creating…"
      error={errors.message}
    >
      <Field label="Name" name="name" autoComplete="off" placeholder="deploy-bot" error={errors.fields.name} />
      <SelectField label="Role" name="role" defaultValue="member" selectClassName="w-32">
        {ROLES.map((r) => (
          <option key={r} value={r}>
            {r}
          </option>
        ))}
      </SelectField>
      <Field
        label="Expires in (days)"
        name="expiresInDays"
        inputMode="numeric"
        defaultValue="90"
        className="w-36"
        error={errors.fields.expiresInDays}
      />
    </Form>
  );
}
