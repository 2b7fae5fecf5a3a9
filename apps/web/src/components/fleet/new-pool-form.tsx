"use client";
import { ISOLATION_CLASSES, type IsolationClass } from "@kiln/domain";
import { Button, Field, inputClasses } from "@kiln/ui";
import { useMutation } from "@tanstack/react-query";
import { useId, useRef, useState, type FormEvent } from "react";
import { useTRPC } from "@/trpc/client.tsx";
import { formErrorsOf, NO_ERRORS, type FormErrors } from "../settings/form-errors.ts";
import { serverError } from "./server-error.ts";

/** "New pool": an org pool <org>/<name> for the org's own hosts (runners.createPool). Enter submits. */
export function NewPoolForm({ org, onCreated }: { org: string; onCreated: (name: string) => Promise<void> }) {
  const trpc = useTRPC();
  const isolationId = useId();
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
  const onSubmit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const fd = new FormData(e.currentTarget);
    const name = String(fd.get("name") ?? "").trim();
    if (!name) return setErrors({ fields: { name: "enter the pool's name" }, message: null });
    create.mutate({ org, name, isolation: String(fd.get("isolation")) as IsolationClass });
  };
  return (
    <form
      ref={formRef}
      noValidate
      onSubmit={onSubmit}
      className="mt-4 border-t border-zinc-200 pt-4 dark:border-zinc-800"
      data-testid="new-pool-form"
      aria-label="New pool"
    >
      <h3 className="mb-2 text-sm font-semibold">New pool</h3>
      <div className="flex flex-wrap items-start gap-3">
        <Field
          label="Pool name"
          name="name"
          autoComplete="off"
          spellCheck={false}
          placeholder="gpu"
          hint={`Created as ${org}/<name>: a-z 0-9 . _ -`}
          error={errors.fields.name}
        />
        <div className="flex flex-col gap-1">
          <label htmlFor={isolationId} className="text-xs font-medium text-zinc-700 dark:text-zinc-300">
            Isolation
          </label>
          <select id={isolationId} name="isolation" defaultValue="process" className={`${inputClasses} w-36`}>
            {ISOLATION_CLASSES.map((c) => (
              <option key={c} value={c}>
                {c}
              </option>
            ))}
          </select>
        </div>
        <Button type="submit" variant="primary" className="mt-5" disabled={create.isPending}>
          {create.isPending ? "Creating…" : "Create pool"}
        </Button>
      </div>
      {errors.message ? (
        <p role="alert" className="mt-2 text-sm text-red-700 dark:text-red-400" data-testid="new-pool-error">
          {errors.message}
        </p>
      ) : null}
    </form>
  );
}
