"use client";
import { Button, Field, inputClasses } from "@kiln/ui";
import { ROLES, type Role } from "@kiln/domain";
import { useMutation } from "@tanstack/react-query";
import { useId, useRef, useState, type FormEvent } from "react";
import { useTRPC } from "@/trpc/client.tsx";
import { formErrorsOf, NO_ERRORS, numberOrNull, type FormErrors } from "../settings/form-errors.ts";

/** Add a member by forge account: the login and the forge's numeric user id. Enter submits. */
export function AddMemberForm({
  org,
  onAdded,
}: {
  org: string;
  onAdded: (login: string, role: Role) => Promise<void>;
}) {
  const trpc = useTRPC();
  const roleId = useId();
  const formRef = useRef<HTMLFormElement>(null);
  const [errors, setErrors] = useState<FormErrors>(NO_ERRORS);
  const add = useMutation(
    trpc.members.add.mutationOptions({
      onMutate: () => setErrors(NO_ERRORS),
      onSuccess: async (r, v) => {
        formRef.current?.reset();
        await onAdded(v.login, r.role);
        formRef.current?.querySelector<HTMLInputElement>("input[name=login]")?.focus();
      },
      onError: (e) => {
        const f = formErrorsOf(e);
        // The engine names login conflicts (a login recorded for another forge id): they belong by the login.
        setErrors(f.message && /login/.test(f.message) ? { fields: { login: f.message }, message: null } : f);
      },
    }),
  );
  const onSubmit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const fd = new FormData(e.currentTarget);
    const login = String(fd.get("login") ?? "").trim();
    const forgeId = numberOrNull(fd.get("forgeId"));
    if (!login) return setErrors({ fields: { login: "enter the forge login" }, message: null });
    if (forgeId === null || !Number.isSafeInteger(forgeId) || forgeId < 1)
      return setErrors({ fields: { forgeId: "enter the forge's numeric user id" }, message: null });
    add.mutate({ org, login, forgeId, role: String(fd.get("role")) as Role });
  };
  return (
    <form
      ref={formRef}
      noValidate
      onSubmit={onSubmit}
      className="mt-4 border-t border-zinc-200 pt-4 dark:border-zinc-800"
      data-testid="add-member-form"
      aria-label="Add a member"
    >
      <h3 className="mb-2 text-sm font-semibold">Add a member</h3>
      <div className="flex flex-wrap items-start gap-3">
        <Field
          label="Login"
          name="login"
          autoComplete="off"
          spellCheck={false}
          placeholder="octocat"
          error={errors.fields.login}
        />
        <Field
          label="Forge user id"
          name="forgeId"
          inputMode="numeric"
          autoComplete="off"
          placeholder="583231"
          hint="curl -s https://api.github.com/users/<login> answers it as id"
          error={errors.fields.forgeId}
        />
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
        <Button type="submit" className="mt-5" disabled={add.isPending}>
          {add.isPending ? "Adding…" : "Add member"}
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
