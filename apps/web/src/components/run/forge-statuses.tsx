import { EmptyState } from "@kiln/ui";
import type { RunPageData } from "../types.ts";
import { RelativeTime } from "../time.tsx";

const STATE_STYLE: Record<string, string> = {
  success: "text-emerald-700 dark:text-emerald-400",
  failure: "text-red-700 dark:text-red-400",
  error: "text-amber-700 dark:text-amber-400",
  pending: "text-zinc-600 dark:text-zinc-400",
};

/**
 * What the forge shows for this run (issue 19): per context, the state Kiln wants and whether the
 * forge has it yet; a delivery still owed says why (rate limit, outage, missing credential) and
 * when it is tried next.
 */
export function ForgeStatuses({ data, now }: { data: RunPageData; now: number }) {
  const rows = data.run.forge_statuses;
  if (rows.length === 0)
    return (
      <EmptyState title="No forge statuses">
        This repository has no forge credential (a per-repo token or a GitHub App installation), so no commit status is
        sent. <code className="text-xs">kiln repo forge {data.repo_name}</code> shows why.
      </EmptyState>
    );
  return (
    <table className="w-full text-left text-sm" data-testid="forge-statuses">
      <thead className="text-xs uppercase tracking-wide text-zinc-500 dark:text-zinc-400">
        <tr>
          <th scope="col" className="py-1.5 pr-4 font-medium">
            Context
          </th>
          <th scope="col" className="py-1.5 pr-4 font-medium">
            State
          </th>
          <th scope="col" className="py-1.5 font-medium">
            Delivery
          </th>
        </tr>
      </thead>
      <tbody className="divide-y divide-zinc-100 dark:divide-zinc-800">
        {rows.map((s) => (
          <tr key={s.context} data-context={s.context} data-delivery={s.delivery}>
            <td className="py-1.5 pr-4 align-top font-mono text-xs break-all">{s.context}</td>
            <td className="py-1.5 pr-4 align-top">
              <span className={`font-medium ${STATE_STYLE[s.state] ?? ""}`}>{s.state}</span>
              <p className="text-xs text-zinc-500 dark:text-zinc-400">{s.description}</p>
            </td>
            <td className="py-1.5 align-top text-xs">
              {s.delivery === "delivered" ? (
                <span>
                  delivered
                  {s.delivered_at ? (
                    <>
                      {" "}
                      <RelativeTime iso={s.delivered_at} now={now} />
                    </>
                  ) : null}
                  {s.check_run_id ? " · check run" : ""}
                </span>
              ) : (
                <span className="text-amber-700 dark:text-amber-400">
                  not yet delivered{s.delivered_state ? ` (forge shows ${s.delivered_state})` : ""}
                  {s.attempts > 0 ? ` · ${s.attempts} attempt${s.attempts === 1 ? "" : "s"}` : ""}
                  {s.next_attempt_at ? (
                    <>
                      {" "}
                      · next <RelativeTime iso={s.next_attempt_at} now={now} />
                    </>
                  ) : null}
                  {s.last_error ? <span className="block break-all text-zinc-500">{s.last_error}</span> : null}
                </span>
              )}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
