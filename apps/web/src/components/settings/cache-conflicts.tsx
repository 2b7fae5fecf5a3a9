"use client";
import { Card, DataTable, EmptyState, shortSha } from "@kiln/ui";
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
      <DataTable
        rows={conflicts}
        rowKey={(c) => c.id}
        testId="cache-conflicts"
        empty={
          <EmptyState title="No cache conflicts">
            Every cache key so far was written with the same bytes by every trusted run that saved it.
          </EmptyState>
        }
        columns={[
          {
            key: "when",
            header: "When",
            className: "text-zinc-500 dark:text-zinc-400",
            cell: (c) => <RelativeTime iso={c.at} now={now} />,
          },
          { key: "repo", header: "Repository", cell: (c) => c.repo },
          { key: "key", header: "Key", className: "font-mono text-xs", cell: (c) => <Short full={c.cache_key} /> },
          { key: "kept", header: "Kept", className: "font-mono text-xs", cell: (c) => <Short full={c.bound_sha256} /> },
          {
            key: "refused",
            header: "Refused (run)",
            className: "font-mono text-xs",
            cell: (c) => <Short full={c.rejected_sha256} title={`${c.rejected_sha256} (run ${c.run_id})`} />,
          },
        ]}
      />
    </Card>
  );
}

function Short({ full, title }: { full: string; title?: string }) {
  return <span title={title ?? full}>{shortSha(full)}</span>;
}
