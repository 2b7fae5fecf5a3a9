"use client";
import { Card, EmptyState } from "@kiln/ui";
import { RelativeTime } from "../time.tsx";
import type { SettingsChangeData } from "../types.ts";

type Limits = { slots: number; weight: number; hard_cap: number | null };

const limits = (l: Limits) =>
  `${l.slots} slots, weight ${l.weight}, ${l.hard_cap === null ? "no cap" : `cap ${l.hard_cap}`}`;

function describe(c: SettingsChangeData): string {
  if (c.kind === "egress") return `${c.action === "allow" ? "allowed" : "removed"} egress to ${c.pattern}`;
  return c.before
    ? `set pool ${c.pool} to ${limits(c.after)} (was ${limits(c.before)})`
    : `added pool ${c.pool}: ${limits(c.after)}`;
}

/** The audit trail (entitlement_change and egress_rule_change rows), newest first. */
export function RecentChanges({ changes, now }: { changes: SettingsChangeData[]; now: number }) {
  return (
    <Card title="Recent changes" id="recent-changes">
      {changes.length === 0 ? (
        <EmptyState title="No changes recorded">
          Every change to capacity or the allow-list is recorded here with who made it.
        </EmptyState>
      ) : (
        <ol className="space-y-1.5 text-sm" data-testid="recent-changes">
          {changes.map((c) => (
            <li key={c.id} className="flex flex-wrap gap-x-2">
              <span className="w-24 shrink-0 text-zinc-500 dark:text-zinc-400">
                <RelativeTime iso={c.at} now={now} />
              </span>
              <span className="font-medium">{c.actor}</span>
              <span>{describe(c)}</span>
            </li>
          ))}
        </ol>
      )}
    </Card>
  );
}
