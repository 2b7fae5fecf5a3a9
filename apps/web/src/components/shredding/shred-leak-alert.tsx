"use client";
import { useQuery } from "@tanstack/react-query";
import { useTRPC } from "@/trpc/client.tsx";

const PATHS: Record<string, string> = {
  api_download: "API download",
  raw_log: "raw log",
  log_stream: "live log stream",
  object_get: "direct object read",
};

/**
 * The org home's alert (issue 21, like issue 17's quarantine alert): data whose keys were destroyed
 * that the deletion sampler could still read. Renders nothing when there is none (or while loading:
 * an addition to the overview, not a gate on it); polls so a new finding shows without a reload.
 */
export function ShredLeakAlert({ org }: { org: string }) {
  const trpc = useTRPC();
  const q = useQuery({ ...trpc.shredding.leaks.queryOptions({ org }), refetchInterval: 30_000 });
  if (q.isError)
    return (
      <p role="status" className="text-sm text-amber-800 dark:text-amber-200" data-testid="shred-leak-alert-error">
        Could not check deleted data: {q.error.message}
      </p>
    );
  if (!q.data || q.data.length === 0) return null;
  return (
    <div
      role="alert"
      className="rounded-lg border border-red-300 bg-red-50 p-4 text-sm text-red-900 dark:border-red-800 dark:bg-red-950 dark:text-red-100"
      data-testid="shred-leak-alert"
    >
      <p className="font-semibold">
        {q.data.length === 1 ? "1 deleted object is" : `${q.data.length} deleted objects are`} still readable: their
        keys were destroyed, but the deletion sampler read them.
      </p>
      <ul className="mt-2 space-y-1">
        {q.data.slice(0, 5).map((l) => (
          <li key={`${l.object_key}:${l.path}`}>
            <code className="break-all">{l.object_key}</code> through the {PATHS[l.path] ?? l.path} ({l.detail}),
            detected {new Date(l.detected_at).toLocaleString()}
          </li>
        ))}
      </ul>
    </div>
  );
}
