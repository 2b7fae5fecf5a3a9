"use client";
import { Card, EmptyState, shortSha } from "@kiln/ui";
import { RelativeTime } from "../time.tsx";
import type { OrgSettingsData } from "../types.ts";

/**
 * Build cache conflicts (docs/adr/0014): a second writer produced other bytes for a key that was
 * already bound. The first writer's entry stays; this is the signal to look for missing inputs or
 * non-determinism in that job.
 */
export function CacheConflicts({ conflicts, now }: { conflicts: OrgSettingsData["cache_conflicts"]; now: number }) {
  return (
    <Card title="Cache conflicts" id="cache-conflicts">
      {conflicts.length === 0 ? (
        <EmptyState title="No cache conflicts">
          Every cache key so far was written with the same bytes by every trusted run that saved it.
        </EmptyState>
      ) : (
        <table className="w-full text-left text-sm" data-testid="cache-conflicts">
          <thead className="text-xs uppercase tracking-wide text-zinc-500 dark:text-zinc-400">
            <tr>
              <th scope="col" className="py-1.5 pr-4 font-medium">
                When
              </th>
              <th scope="col" className="py-1.5 pr-4 font-medium">
                Repository
              </th>
              <th scope="col" className="py-1.5 pr-4 font-medium">
                Key
              </th>
              <th scope="col" className="py-1.5 pr-4 font-medium">
                Kept
              </th>
              <th scope="col" className="py-1.5 font-medium">
                Refused (run)
              </th>
            </tr>
          </thead>
          <tbody className="divide-y divide-zinc-100 dark:divide-zinc-800">
            {conflicts.map((c) => (
              <tr key={c.id}>
                <td className="py-1.5 pr-4 text-zinc-500 dark:text-zinc-400">
                  <RelativeTime iso={c.at} now={now} />
                </td>
                <td className="py-1.5 pr-4">{c.repo}</td>
                <td className="py-1.5 pr-4 font-mono text-xs" title={c.cache_key}>
                  {shortSha(c.cache_key)}
                </td>
                <td className="py-1.5 pr-4 font-mono text-xs" title={c.bound_sha256}>
                  {shortSha(c.bound_sha256)}
                </td>
                <td className="py-1.5 font-mono text-xs" title={`${c.rejected_sha256} (run ${c.run_id})`}>
                  {shortSha(c.rejected_sha256)}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </Card>
  );
}
