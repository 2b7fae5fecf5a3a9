"use client";
import { ISOLATION_CLASSES, type IsolationClass } from "@kiln/domain";
import { Field, Form, SelectField } from "@kiln/ui";
import { useMutation } from "@tanstack/react-query";
import { useRef, useState } from "react";
import { useTRPC } from "@/trpc/client.tsx";
import { formErrorsOf, NO_ERRORS, type FormErrors } from "../settings/form-errors.ts";
import { serverError } from "./server-error.ts";

/** "New pool": an org pool <org>/<name> for the org's own hosts (runners.createPool). Enter submits. */
export function NewPoolForm({ org, onCreated }: { org: string; onCreated: (name: string) => Promise<void> }) {
  const trpc = useTRPC();
  const formRef = useRef<HTMLFormElement>(null);
  const [errors, setErrors] = useState<FormErrors>(NO_ERRORS);
  const create = useMutation(
    trpc.runners.createPool.mutationOptions({
      onMutate: () => setErrors(NO_ERRORS),
      onSuccess: async (r) => {
        formRef.current?.reset();
        await onCreated(r.name);
      },
      onError: (e) => {
        const f = formErrorsOf(e);
        setErrors(f.message ? { fields: {}, message: serverError(e) } : f);
      },
    }),
  );
  const onSubmit = (fd: FormData) => {
    const name = String(fd.get("name") ?? "").trim();
    if (!name) return setErrors({ fields: { name: "enter the pool's name" }, message: null });
    create.mutate({ org, name, isolation: String(fd.get("isolation")) as IsolationClass });
  };
  return (
    <Form
      label="New pool"
      title="New pool"
      testId="new-pool-form"
      className="mt-4 border-t border-zinc-200 pt-4 dark:border-zinc-800"
      formRef={formRef}
      onSubmit={onSubmit}
      pending={create.isPending}
      submitLabel="Create pool"
      pendingLabel="Creating…"
      error={errors.message ? <span data-testid="new-pool-error">{errors.message}</span> : null}
    >
      <Field
        label="Pool name"
        name="name"
        autoComplete="off"
        spellCheck={false}
        placeholder="gpu"
        hint={`Created as ${org}/<name>: a-z 0-9 . _ -`}
        error={errors.fields.name}
      />
      <SelectField label="Isolation" name="isolation" defaultValue="process" selectClassName="w-36">
        {ISOLATION_CLASSES.map((c) => (
          <option key={c} value={c}>
            {c}
          </option>
        ))}
      </SelectField>
    </Form>
  );
}
