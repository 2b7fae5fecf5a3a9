"use client";
import { useRouter } from "next/navigation";
import { useId } from "react";
import type { Membership } from "../types.ts";

/** A native select: keyboard and screen-reader friendly without extra code. */
export function OrgSwitcher({ orgs, current }: { orgs: Membership[]; current: string }) {
  const router = useRouter();
  const id = useId();
  return (
    <div className="flex items-center gap-2">
      <label htmlFor={id} className="sr-only">
        Organisation
      </label>
      <select
        id={id}
        value={current}
        onChange={(e) => router.push(`/orgs/${encodeURIComponent(e.target.value)}`)}
        className="h-8 rounded-md border border-zinc-300 bg-white px-2 text-sm font-medium focus-visible:outline-2 focus-visible:outline-blue-600 dark:border-zinc-700 dark:bg-zinc-900"
      >
        {orgs.map((o) => (
          <option key={o.slug} value={o.slug}>
            {o.slug} ({o.role})
          </option>
        ))}
        {orgs.some((o) => o.slug === current) ? null : <option value={current}>{current}</option>}
      </select>
    </div>
  );
}
