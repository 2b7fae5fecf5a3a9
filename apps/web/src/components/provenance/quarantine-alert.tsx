"use client";
import { useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { useTRPC } from "@/trpc/client.tsx";

/**
 * The org home's alert (issue 17): artifacts whose stored bytes no longer match their signed
 * provenance. Renders nothing when there are none (or while loading: the alert is an addition to
 * the overview, not a gate on it); polls so a new quarantine shows up without a reload.
 */
export function QuarantineAlert({ org }: { org: string }) {
  const trpc = useTRPC();
  const q = useQuery({ ...trpc.provenance.quarantines.queryOptions({ org }), refetchInterval: 15_000 });
  if (!q.data || q.data.length === 0) return null;
  return (
    <div
      role="alert"
      className="rounded-lg border border-red-300 bg-red-50 p-4 text-sm text-red-900 dark:border-red-800 dark:bg-red-950 dark:text-red-100"
      data-testid="quarantine-alert"
    >
      <p className="font-semibold">
        {q.data.length === 1 ? "1 artifact is" : `${q.data.length} artifacts are`} quarantined: the stored bytes do not
        match their signed provenance.
      </p>
      <ul className="mt-2 space-y-1">
        {q.data.slice(0, 5).map((a) => (
          <li key={a.artifact_id}>
            <Link className="font-medium underline" href={`/orgs/${org}/runs/${a.run_id}#artifacts`}>
              {a.name}
            </Link>{" "}
            ({a.reason}) — downloads refused; kept for the audit.
          </li>
        ))}
      </ul>
    </div>
  );
}
