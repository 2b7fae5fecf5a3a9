"use client";
import { Button } from "@kiln/ui";
import { useMutation } from "@tanstack/react-query";
import { type FormEvent, useState } from "react";
import { useTRPC } from "@/trpc/client.tsx";
import type { PoolEntitlementData } from "../../types.ts";
import { formErrorsOf, NO_ERRORS, numberOrNull, type FormErrors } from "../form-errors.ts";
import { useRefreshSettings } from "../use-settings.ts";
import { CELL, NumberInput, RowError } from "./number-cell.tsx";

/** An org admin's row: read-only limits and a control that can only lower the hard cap. */
export function LowerCapRow({ org, row }: { org: string; row: PoolEntitlementData }) {
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
  return (
    <tr data-pool={row.pool} data-editing={editing ? "true" : undefined}>
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
        {editing ? (
          <NumberInput
            formId={formId}
            name="hardCap"
            label={`Hard cap for ${row.pool}`}
            value={row.hard_cap}
            error={errors.fields.hardCap}
            min={0}
            max={row.hard_cap ?? undefined}
            autoFocus
          />
        ) : (
          (row.hard_cap ?? <span className="text-zinc-500">none</span>)
        )}
      </td>
      <td className={`${CELL} tabular-nums`}>{row.running}</td>
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
        <RowError message={errors.message} />
      </td>
    </tr>
  );
}
