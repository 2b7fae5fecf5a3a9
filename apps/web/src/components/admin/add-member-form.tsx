"use client";
import { Field, Form, SelectField } from "@kiln/ui";
import { ROLES, type Role } from "@kiln/domain";
import { useMutation } from "@tanstack/react-query";
import { useRef, useState } from "react";
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
  const onSubmit = (fd: FormData) => {
    const login = String(fd.get("login") ?? "").trim();
    const forgeId = numberOrNull(fd.get("forgeId"));
    if (!login) return setErrors({ fields: { login: "enter the forge login" }, message: null });
    if (forgeId === null || !Number.isSafeInteger(forgeId) || forgeId < 1)
      return setErrors({ fields: { forgeId: "enter the forge's numeric user id" }, message: null });
    add.mutate({ org, login, forgeId, role: String(fd.get("role")) as Role });
  };
  return (
    <Form
      label="Add a member"
      title="Add a member"
      testId="add-member-form"
      className="mt-4 border-t border-zinc-200 pt-4 dark:border-zinc-800"
      formRef={formRef}
      onSubmit={onSubmit}
      pending={add.isPending}
      submitLabel="Add member"
      pendingLabel="Adding…"
      error={errors.message}
    >
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
      <SelectField label="Role" name="role" defaultValue="member" selectClassName="w-32">
        {ROLES.map((r) => (
          <option key={r} value={r}>
            {r}
          </option>
        ))}
      </SelectField>
    </Form>
  );
}
