"use client";
import { Field, Form } from "@kiln/ui";
import { useRef, useState } from "react";
import { useSetEntitlement } from "./use-set-entitlement.ts";

/** A platform admin adds a pool's entitlement; an existing pool is edited in its row instead. */
export function AddPoolForm({ org, existing }: { org: string; existing: string[] }) {
  const formRef = useRef<HTMLFormElement>(null);
  const [saved, setSaved] = useState<string | null>(null);
  const submitted = useRef("");
  const { submit, errors, setErrors, pending } = useSetEntitlement(org, () => {
    setSaved(submitted.current);
    formRef.current?.reset();
    formRef.current?.querySelector<HTMLInputElement>("input[name=pool]")?.focus();
  });
  const onSubmit = (data: FormData) => {
    const pool = String(data.get("pool") ?? "").trim();
    setSaved(null);
    // Adding must not silently overwrite: an existing pool is edited in its row.
    if (existing.includes(pool))
      return setErrors({ fields: { pool: `${pool} is already set; edit it in the table above` }, message: null });
    submitted.current = pool;
    submit(pool, data);
  };
  const number = { type: "number", inputMode: "numeric", step: 1 } as const;
  return (
    <Form
      label="Add a pool"
      title="Add a pool"
      testId="add-pool-form"
      className="mt-4 border-t border-zinc-200 pt-4 dark:border-zinc-800"
      formRef={formRef}
      onSubmit={onSubmit}
      pending={pending}
      submitLabel="Add pool"
      pendingLabel="Adding…"
      error={errors.message}
      note={saved ? `Saved pool ${saved}.` : null}
    >
      <Field
        label="Pool"
        name="pool"
        placeholder="default"
        autoComplete="off"
        error={errors.fields.pool}
        className="w-40"
      />
      <Field label="Slots" name="slots" {...number} min={0} max={10_000} error={errors.fields.slots} className="w-28" />
      <Field
        label="Weight"
        name="weight"
        {...number}
        min={1}
        max={1000}
        defaultValue={1}
        error={errors.fields.weight}
        className="w-28"
      />
      <Field
        label="Hard cap"
        name="hardCap"
        {...number}
        min={0}
        placeholder="none"
        hint="Empty for no cap"
        error={errors.fields.hardCap}
        className="w-32"
      />
    </Form>
  );
}
