"use client";
import { Button, Field, inputClasses } from "@kiln/ui";
import { ROLES, type Role } from "@kiln/domain";
import { useMutation } from "@tanstack/react-query";
import { useId, useRef, useState, type FormEvent } from "react";
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
  const roleId = useId();
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
  const onSubmit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const fd = new FormData(e.currentTarget);
    const name = String(fd.get("name") ?? "").trim();
    const days = numberOrNull(fd.get("expiresInDays"));
    if (!name) return setErrors({ fields: { name: "enter a name" }, message: null });
    if (days === null || !Number.isInteger(days))
      return setErrors({ fields: { expiresInDays: "enter a whole number of days" }, message: null });
    create.mutate({ org, name, role: String(fd.get("role")) as Role, expiresInDays: days });
  };
  return (
    <form
      ref={formRef}
      noValidate
      onSubmit={onSubmit}
      className="mt-4 border-t border-zinc-200 pt-4 dark:border-zinc-800"
      data-testid="create-token-form"
      aria-label="Create an API token"
    >
      <h3 className="mb-2 text-sm font-semibold">Create a token</h3>
      <div className="flex flex-wrap items-start gap-3">
        <Field label="Name" name="name" autoComplete="off" placeholder="deploy-bot" error={errors.fields.name} />
        <div className="flex flex-col gap-1">
          <label htmlFor={roleId} className="text-xs font-medium text-zinc-700 dark:text-zinc-300">
            Role
          </label>
          <select id={roleId} name="role" defaultValue="member" className={`${inputClasses} w-32`}>
            {ROLES.map((r) => (
              <option key={r} value={r}>
                {r}
              </option>
            ))}
          </select>
        </div>
        <Field
          label="Expires in (days)"
          name="expiresInDays"
          inputMode="numeric"
          defaultValue="90"
          className="w-36"
          error={errors.fields.expiresInDays}
        />
        <Button type="submit" className="mt-5" disabled={create.isPending}>
          {create.isPending ? "Creating…" : "Create token"}
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
