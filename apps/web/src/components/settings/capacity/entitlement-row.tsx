"use client";
import { Button } from "@kiln/ui";
import { type FormEvent, useEffect, useRef, useState } from "react";
import type { PoolEntitlementData } from "../../types.ts";
import { NO_ERRORS } from "../form-errors.ts";
import { CELL, NumberInput, RowError } from "./number-cell.tsx";
import { useSetEntitlement } from "./use-set-entitlement.ts";

/** A platform admin's row: the pool's limits, edited in place (Esc cancels, focus returns to Edit). */
export function EntitlementRow({ org, row, admin }: { org: string; row: PoolEntitlementData; admin: boolean }) {
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
  if (!editing) return <ReadRow row={row} formId={formId} admin={admin} onEdit={() => setEditing(true)} />;
  const onSubmit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    submit(row.pool, new FormData(e.currentTarget));
  };
  const cancel = () => {
    setErrors(NO_ERRORS);
    close();
  };
  const field = (name: string, label: string, value: number | null, min: number, max?: number) => (
    <td className={CELL}>
      <NumberInput
        formId={formId}
        name={name}
        label={`${label} for ${row.pool}`}
        value={value}
        error={errors.fields[name]}
        min={min}
        max={max}
        autoFocus={name === "slots"}
      />
    </td>
  );
  return (
    <tr data-pool={row.pool} data-editing="true" onKeyDown={(e) => e.key === "Escape" && cancel()}>
      <th scope="row" className={`${CELL} pt-4 font-mono text-xs font-medium`}>
        {row.pool}
      </th>
      {field("slots", "Slots", row.slots, 0, 10_000)}
      {field("weight", "Weight", row.weight, 1, 1000)}
      {field("hardCap", "Hard cap", row.hard_cap, 0)}
      <td className={`${CELL} pt-4 tabular-nums`}>{row.running}</td>
      <td className="py-2 text-right align-top">
        <form id={formId} noValidate onSubmit={onSubmit} className="flex justify-end gap-1.5">
          <Button type="submit" size="sm" variant="primary" disabled={pending}>
            {pending ? "Saving…" : "Save"}
          </Button>
          <Button size="sm" variant="ghost" onClick={cancel}>
            Cancel
          </Button>
        </form>
        <RowError message={errors.message} />
      </td>
    </tr>
  );
}

function ReadRow({
  row,
  formId,
  admin,
  onEdit,
}: {
  row: PoolEntitlementData;
  formId: string;
  admin: boolean;
  onEdit: () => void;
}) {
  return (
    <tr data-pool={row.pool}>
      <th scope="row" className={`${CELL} font-mono text-xs font-medium`}>
        {row.pool}
      </th>
      <td className={`${CELL} tabular-nums`} data-field="slots">
        {row.slots}
      </td>
      <td className={`${CELL} tabular-nums`} data-field="weight">
        {row.weight}
      </td>
      <td className={`${CELL} tabular-nums`} data-field="hard_cap">
        {row.hard_cap ?? <span className="text-zinc-500">none</span>}
      </td>
      <td className={`${CELL} tabular-nums`}>{row.running}</td>
      {admin ? (
        <td className="py-2 text-right">
          <Button id={`${formId}-edit`} size="sm" aria-label={`Edit ${row.pool}`} onClick={onEdit}>
            Edit
          </Button>
        </td>
      ) : null}
    </tr>
  );
}
