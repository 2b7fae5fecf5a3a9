"use client";
import { RUN_TRIGGERS } from "@kiln/domain";
import { Button } from "@kiln/ui";
import { TRIGGER_LABEL } from "./runs-table.tsx";
import { useId, useState, type ReactNode } from "react";

export interface FilterValues {
  repoId?: string;
  ref?: string;
  trigger?: string;
  status?: string;
  outcome?: string;
}

const SELECT =
  "h-8 rounded-md border border-zinc-300 bg-white px-2 text-sm focus-visible:outline-2 focus-visible:outline-blue-600 dark:border-zinc-700 dark:bg-zinc-900";

function Field({ label, children }: { label: string; children: (id: string) => ReactNode }) {
  const id = useId();
  return (
    <div className="flex flex-col gap-1">
      <label htmlFor={id} className="text-xs font-medium text-zinc-600 dark:text-zinc-400">
        {label}
      </label>
      {children(id)}
    </div>
  );
}

/** "main" means refs/heads/main; a full ref (refs/pull/12/merge) is used as typed. */
function normaliseRef(input: string): string | undefined {
  const v = input.trim();
  if (!v) return undefined;
  return v.startsWith("refs/") ? v : `refs/heads/${v}`;
}

export function RunFiltersBar({
  value,
  repos,
  onChange,
}: {
  value: FilterValues;
  repos: { id: string; full_name: string }[];
  onChange: (v: FilterValues) => void;
}) {
  const [ref, setRef] = useState(value.ref?.replace(/^refs\/heads\//, "") ?? "");
  const set = (k: keyof FilterValues, v: string) => onChange({ ...value, [k]: v || undefined });
  return (
    <form
      role="search"
      aria-label="Filter runs"
      className="flex flex-wrap items-end gap-3"
      onSubmit={(e) => {
        e.preventDefault();
        onChange({ ...value, ref: normaliseRef(ref) });
      }}
    >
      <Field label="Repository">
        {(id) => (
          <select id={id} className={SELECT} value={value.repoId ?? ""} onChange={(e) => set("repoId", e.target.value)}>
            <option value="">All</option>
            {repos.map((r) => (
              <option key={r.id} value={r.id}>
                {r.full_name}
              </option>
            ))}
          </select>
        )}
      </Field>
      <Field label="Branch">
        {(id) => (
          <input
            id={id}
            className={`${SELECT} w-40`}
            placeholder="main or refs/…"
            value={ref}
            onChange={(e) => setRef(e.target.value)}
            onBlur={() => onChange({ ...value, ref: normaliseRef(ref) })}
          />
        )}
      </Field>
      <Field label="Trigger">
        {(id) => (
          <select
            id={id}
            className={SELECT}
            value={value.trigger ?? ""}
            onChange={(e) => set("trigger", e.target.value)}
          >
            <option value="">All</option>
            {RUN_TRIGGERS.map((t) => (
              <option key={t} value={t}>
                {TRIGGER_LABEL[t]}
              </option>
            ))}
          </select>
        )}
      </Field>
      <Field label="Status">
        {(id) => (
          <select id={id} className={SELECT} value={value.status ?? ""} onChange={(e) => set("status", e.target.value)}>
            <option value="">All</option>
            <option value="pending">queued</option>
            <option value="running">running</option>
            <option value="cancelling">cancelling</option>
            <option value="completed">completed</option>
          </select>
        )}
      </Field>
      <Field label="Outcome">
        {(id) => (
          <select
            id={id}
            className={SELECT}
            value={value.outcome ?? ""}
            onChange={(e) => set("outcome", e.target.value)}
          >
            <option value="">All</option>
            <option value="success">success</option>
            <option value="user_failure">failed: your code</option>
            <option value="platform_failure">failed: platform</option>
            <option value="cancelled">cancelled</option>
            <option value="timed_out">timed out</option>
            <option value="blocked_by_policy">blocked by policy</option>
          </select>
        )}
      </Field>
      <Button type="submit" size="sm">
        Apply
      </Button>
      <Button
        size="sm"
        variant="ghost"
        onClick={() => {
          setRef("");
          onChange({});
        }}
      >
        Clear
      </Button>
    </form>
  );
}
