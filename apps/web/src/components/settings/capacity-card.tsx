"use client";
import { Button, Card, EmptyState, Field, inputClasses } from "@kiln/ui";
import { useMutation, useQuery } from "@tanstack/react-query";
import { useEffect, useRef, useState, type FormEvent } from "react";
import { useTRPC } from "@/trpc/client.tsx";
import type { PoolEntitlementData } from "../types.ts";
import { formErrorsOf, NO_ERRORS, numberOrNull, type FormErrors } from "./form-errors.ts";
import { useRefreshSettings } from "./use-settings.ts";

/**
 * Capacity per pool: owned slots (lent to others while idle), the weight for sharing what is left,
 * and the hard cap the claim transaction enforces. Shared capacity is set by platform admins, who
 * edit a row in place or add a pool; an org admin may only lower its own hard cap (the server
 * enforces both, docs/scheduling.md).
 */
export function CapacityCard({
  org,
  rows,
  admin: orgAdmin,
}: {
  org: string;
  rows: PoolEntitlementData[];
  admin: boolean;
}) {
  const trpc = useTRPC();
  const rights = useQuery(trpc.tenants.capacityRights.queryOptions());
  const admin = rights.data?.platformAdmin === true;
  const lowerOnly = !admin && orgAdmin;
  return (
    <Card title="Capacity" id="capacity">
      <p className="mb-3 text-sm text-zinc-600 dark:text-zinc-400">
        Slots are the concurrent jobs this org owns in a pool (lent to others while idle, returned first). Weight sets
        its share of spare capacity. The hard cap is never exceeded, even when more is idle.{" "}
        {admin
          ? "You are a platform admin: changes here are audited."
          : "Slots, weight and raising the cap are set by platform operators."}
        {lowerOnly ? " As an org admin you may lower your hard cap." : ""}
      </p>
      {rows.length === 0 ? (
        <EmptyState title="No entitlements yet">
          This org owns no slots and only borrows idle capacity at weight 1.
        </EmptyState>
      ) : (
        <div className="overflow-x-auto">
          <table className="w-full text-left text-sm" data-testid="capacity-table">
            <thead className="text-xs uppercase tracking-wide text-zinc-500 dark:text-zinc-400">
              <tr>
                <th scope="col" className="py-2 pr-4 font-medium">
                  Pool
                </th>
                <th scope="col" className="py-2 pr-4 font-medium">
                  Slots
                </th>
                <th scope="col" className="py-2 pr-4 font-medium">
                  Weight
                </th>
                <th scope="col" className="py-2 pr-4 font-medium">
                  Hard cap
                </th>
                <th scope="col" className="py-2 pr-4 font-medium">
                  Running now
                </th>
                {admin || lowerOnly ? (
                  <th scope="col" className="py-2 font-medium">
                    <span className="sr-only">Actions</span>
                  </th>
                ) : null}
              </tr>
            </thead>
            <tbody className="divide-y divide-zinc-100 dark:divide-zinc-800">
              {rows.map((r) =>
                lowerOnly ? (
                  <LowerCapRow key={r.pool} org={org} row={r} />
                ) : (
                  <EntitlementRow key={r.pool} org={org} row={r} admin={admin} />
                ),
              )}
            </tbody>
          </table>
        </div>
      )}
      {admin ? <AddPoolForm org={org} existing={rows.map((r) => r.pool)} /> : null}
    </Card>
  );
}

function useSetEntitlement(org: string, onDone: () => void) {
  const trpc = useTRPC();
  const refresh = useRefreshSettings(org);
  const [errors, setErrors] = useState<FormErrors>(NO_ERRORS);
  const m = useMutation(
    trpc.tenants.setEntitlement.mutationOptions({
      onMutate: () => setErrors(NO_ERRORS),
      onSuccess: async () => {
        await refresh();
        onDone();
      },
      onError: (e) => setErrors(formErrorsOf(e)),
    }),
  );
  const submit = (pool: string, form: HTMLFormElement) => {
    const data = new FormData(form);
    const slots = numberOrNull(data.get("slots"));
    const weight = numberOrNull(data.get("weight"));
    const hardCap = numberOrNull(data.get("hardCap"));
    // Only what JSON cannot carry is checked here (empty, not a number: NaN would arrive as null);
    // the limits are the server's, and its messages are shown as they come.
    const missing: Record<string, string> = {};
    if (!pool) missing.pool = "enter a pool name";
    if (slots === null) missing.slots = "enter the number of slots";
    if (weight === null) missing.weight = "enter a weight";
    for (const [k, v] of Object.entries({ slots, weight, hardCap }))
      if (v !== null && !Number.isFinite(v)) missing[k] = "enter a whole number";
    if (Object.keys(missing).length > 0 || slots === null || weight === null)
      return setErrors({ fields: missing, message: null });
    m.mutate({ org, pool, slots, weight, hardCap });
  };
  return { submit, errors, setErrors, pending: m.isPending };
}

function EntitlementRow({ org, row, admin }: { org: string; row: PoolEntitlementData; admin: boolean }) {
  const [editing, setEditing] = useState(false);
  const formId = `entitlement-${row.pool}`;
  const returnFocus = useRef(false);
  const close = () => {
    returnFocus.current = true;
    setEditing(false);
  };
  const { submit, errors, setErrors, pending } = useSetEntitlement(org, close);
  useEffect(() => {
    // Back on the row's Edit button after saving or cancelling, so the keyboard user is not lost.
    if (!editing && returnFocus.current) document.getElementById(`${formId}-edit`)?.focus();
    returnFocus.current = false;
  }, [editing, formId]);
  const onSubmit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    submit(row.pool, e.currentTarget);
  };
  const cancel = () => {
    setErrors(NO_ERRORS);
    close();
  };
  const cell = "py-2 pr-4 align-top";
  if (!editing) {
    return (
      <tr data-pool={row.pool}>
        <th scope="row" className={`${cell} font-mono text-xs font-medium`}>
          {row.pool}
        </th>
        <td className={`${cell} tabular-nums`} data-field="slots">
          {row.slots}
        </td>
        <td className={`${cell} tabular-nums`} data-field="weight">
          {row.weight}
        </td>
        <td className={`${cell} tabular-nums`} data-field="hard_cap">
          {row.hard_cap ?? <span className="text-zinc-500">none</span>}
        </td>
        <td className={`${cell} tabular-nums`}>{row.running}</td>
        {admin ? (
          <td className="py-2 text-right">
            <Button id={`${formId}-edit`} size="sm" aria-label={`Edit ${row.pool}`} onClick={() => setEditing(true)}>
              Edit
            </Button>
          </td>
        ) : null}
      </tr>
    );
  }
  const input = (
    name: string,
    label: string,
    value: number | null,
    extra: { min: number; max?: number; autoFocus?: boolean },
  ) => (
    <td className={cell}>
      <label htmlFor={`${formId}-${name}`} className="sr-only">{`${label} for ${row.pool}`}</label>
      <input
        id={`${formId}-${name}`}
        form={formId}
        name={name}
        type="number"
        inputMode="numeric"
        step={1}
        defaultValue={value ?? ""}
        placeholder={name === "hardCap" ? "none" : undefined}
        aria-invalid={errors.fields[name] ? true : undefined}
        aria-describedby={errors.fields[name] ? `${formId}-${name}-error` : undefined}
        className={`${inputClasses} w-24`}
        {...extra}
      />
      {errors.fields[name] ? (
        <p id={`${formId}-${name}-error`} className="mt-1 max-w-40 text-xs text-red-700 dark:text-red-400">
          {errors.fields[name]}
        </p>
      ) : null}
    </td>
  );
  return (
    <tr data-pool={row.pool} data-editing="true" onKeyDown={(e) => e.key === "Escape" && cancel()}>
      <th scope="row" className={`${cell} pt-4 font-mono text-xs font-medium`}>
        {row.pool}
      </th>
      {input("slots", "Slots", row.slots, { min: 0, max: 10_000, autoFocus: true })}
      {input("weight", "Weight", row.weight, { min: 1, max: 1000 })}
      {input("hardCap", "Hard cap", row.hard_cap, { min: 0 })}
      <td className={`${cell} pt-4 tabular-nums`}>{row.running}</td>
      <td className="py-2 text-right align-top">
        {/* The inputs sit in other cells and join this form through their form attribute (a form cannot wrap a table row). */}
        <form id={formId} noValidate onSubmit={onSubmit} className="flex justify-end gap-1.5">
          <Button type="submit" size="sm" variant="primary" disabled={pending}>
            {pending ? "Saving…" : "Save"}
          </Button>
          <Button size="sm" variant="ghost" onClick={cancel}>
            Cancel
          </Button>
        </form>
        {errors.message ? (
          <p role="alert" className="mt-1 text-xs text-red-700 dark:text-red-400">
            {errors.message}
          </p>
        ) : null}
      </td>
    </tr>
  );
}

/** An org admin's row: read-only limits and a control that can only lower the hard cap. */
function LowerCapRow({ org, row }: { org: string; row: PoolEntitlementData }) {
  const trpc = useTRPC();
  const refresh = useRefreshSettings(org);
  const [editing, setEditing] = useState(false);
  const [errors, setErrors] = useState<FormErrors>(NO_ERRORS);
  const m = useMutation(
    trpc.tenants.lowerHardCap.mutationOptions({
      onMutate: () => setErrors(NO_ERRORS),
      onSuccess: async () => {
        await refresh();
        setEditing(false);
      },
      onError: (e) => setErrors(formErrorsOf(e)),
    }),
  );
  const formId = `lower-cap-${row.pool}`;
  const onSubmit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const hardCap = numberOrNull(new FormData(e.currentTarget).get("hardCap"));
    if (hardCap === null || !Number.isFinite(hardCap))
      return setErrors({ fields: { hardCap: "enter a whole number" }, message: null });
    m.mutate({ org, pool: row.pool, hardCap });
  };
  const cell = "py-2 pr-4 align-top";
  return (
    <tr data-pool={row.pool} data-editing={editing ? "true" : undefined}>
      <th scope="row" className={`${cell} font-mono text-xs font-medium`}>
        {row.pool}
      </th>
      <td className={`${cell} tabular-nums`} data-field="slots">
        {row.slots}
      </td>
      <td className={`${cell} tabular-nums`} data-field="weight">
        {row.weight}
      </td>
      <td className={`${cell} tabular-nums`} data-field="hard_cap">
        {editing ? (
          <>
            <label htmlFor={`${formId}-hardCap`} className="sr-only">{`Hard cap for ${row.pool}`}</label>
            <input
              id={`${formId}-hardCap`}
              form={formId}
              name="hardCap"
              type="number"
              inputMode="numeric"
              step={1}
              min={0}
              max={row.hard_cap ?? undefined}
              defaultValue={row.hard_cap ?? ""}
              autoFocus
              aria-invalid={errors.fields.hardCap ? true : undefined}
              className={`${inputClasses} w-24`}
            />
            {errors.fields.hardCap ? (
              <p className="mt-1 max-w-40 text-xs text-red-700 dark:text-red-400">{errors.fields.hardCap}</p>
            ) : null}
          </>
        ) : (
          (row.hard_cap ?? <span className="text-zinc-500">none</span>)
        )}
      </td>
      <td className={`${cell} tabular-nums`}>{row.running}</td>
      <td className="py-2 text-right align-top">
        {editing ? (
          <form id={formId} noValidate onSubmit={onSubmit} className="flex justify-end gap-1.5">
            <Button type="submit" size="sm" variant="primary" disabled={m.isPending}>
              {m.isPending ? "Saving…" : "Lower cap"}
            </Button>
            <Button size="sm" variant="ghost" onClick={() => setEditing(false)}>
              Cancel
            </Button>
          </form>
        ) : (
          <Button size="sm" aria-label={`Lower the hard cap of ${row.pool}`} onClick={() => setEditing(true)}>
            Lower cap
          </Button>
        )}
        {errors.message ? (
          <p role="alert" className="mt-1 text-xs text-red-700 dark:text-red-400">
            {errors.message}
          </p>
        ) : null}
      </td>
    </tr>
  );
}

function AddPoolForm({ org, existing }: { org: string; existing: string[] }) {
  const formRef = useRef<HTMLFormElement>(null);
  const [saved, setSaved] = useState<string | null>(null);
  const submitted = useRef("");
  const { submit, errors, setErrors, pending } = useSetEntitlement(org, () => {
    setSaved(submitted.current);
    formRef.current?.reset();
    formRef.current?.querySelector<HTMLInputElement>("input[name=pool]")?.focus();
  });
  const onSubmit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const pool = String(new FormData(e.currentTarget).get("pool") ?? "").trim();
    setSaved(null);
    // Adding must not silently overwrite: an existing pool is edited in its row.
    if (existing.includes(pool))
      return setErrors({ fields: { pool: `${pool} is already set; edit it in the table above` }, message: null });
    submitted.current = pool;
    submit(pool, e.currentTarget);
  };
  return (
    <form
      ref={formRef}
      noValidate
      onSubmit={onSubmit}
      aria-labelledby="add-pool-title"
      className="mt-4 border-t border-zinc-200 pt-4 dark:border-zinc-800"
      data-testid="add-pool-form"
    >
      <h3 id="add-pool-title" className="mb-2 text-sm font-semibold">
        Add a pool
      </h3>
      <div className="flex flex-wrap items-start gap-3">
        <Field
          label="Pool"
          name="pool"
          placeholder="default"
          autoComplete="off"
          error={errors.fields.pool}
          className="w-40"
        />
        <Field
          label="Slots"
          name="slots"
          type="number"
          inputMode="numeric"
          min={0}
          max={10_000}
          step={1}
          error={errors.fields.slots}
          className="w-28"
        />
        <Field
          label="Weight"
          name="weight"
          type="number"
          inputMode="numeric"
          min={1}
          max={1000}
          step={1}
          defaultValue={1}
          error={errors.fields.weight}
          className="w-28"
        />
        <Field
          label="Hard cap"
          name="hardCap"
          type="number"
          inputMode="numeric"
          min={0}
          step={1}
          placeholder="none"
          hint="Empty for no cap"
          error={errors.fields.hardCap}
          className="w-32"
        />
        <Button type="submit" variant="primary" className="mt-5" disabled={pending}>
          {pending ? "Adding…" : "Add pool"}
        </Button>
      </div>
      {errors.message ? (
        <p role="alert" className="mt-2 text-sm text-red-700 dark:text-red-400">
          {errors.message}
        </p>
      ) : null}
      <p role="status" className="mt-2 text-sm text-emerald-700 dark:text-emerald-400">
        {saved ? `Saved pool ${saved}.` : ""}
      </p>
    </form>
  );
}
