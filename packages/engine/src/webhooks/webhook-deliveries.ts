import type { Db } from "@kiln/db";
import type { RetentionWindows } from "@kiln/domain";
import { cancelPullRequestRuns } from "../runs/index.ts";
import type { SqlPool } from "../shared/sql-pool.ts";

export type WebhookResult =
  | { status: 202; runId: string; duplicate: false }
  | { status: 200; runId: string | null; duplicate: boolean; ignored?: string };

/** One verified delivery: its X-GitHub-Delivery id (unique per provider) and its event name. */
export interface Delivery {
  id: string;
  event: string;
}

/** The answer to a copy of a delivery already recorded: the run it created, if any. */
export async function priorDelivery(sql: SqlPool, deliveryId: string): Promise<WebhookResult> {
  const rows = await sql.query<{ run_id: string | null }>({
    name: "webhook-prior",
    text: "SELECT run_id FROM webhook_delivery WHERE provider = 'github' AND delivery_id = $1",
    values: [deliveryId],
  });
  return { status: 200 as const, runId: rows.rows[0]?.run_id ?? null, duplicate: true };
}

/** A delivery that starts nothing, recorded so missed-delivery recovery counts it as processed. */
export async function recordIgnored(
  sql: SqlPool,
  repoId: string,
  delivery: Delivery,
  reason: string,
): Promise<WebhookResult> {
  const ignored = await sql.query({
    name: "webhook-ignored",
    text: `INSERT INTO webhook_delivery (provider, delivery_id, event, repo_id, outcome) VALUES ('github', $1, $2, $3::uuid, 'ignored')
           ON CONFLICT (provider, delivery_id) DO NOTHING RETURNING id`,
    values: [delivery.id, delivery.event, repoId],
  });
  return ignored.rowCount === 1
    ? { status: 200 as const, runId: null, duplicate: false, ignored: reason }
    : priorDelivery(sql, delivery.id);
}

/** A closed pull request: its unfinished runs are cancelled, then the delivery is recorded. */
export async function closePullRequest(
  db: Db,
  sql: SqlPool,
  repoId: string,
  delivery: Delivery,
  number: number,
  retention: RetentionWindows | undefined,
): Promise<WebhookResult> {
  // A copy of a close already handled changes nothing (the PR may have been reopened since).
  if (await deliverySeen(sql, delivery.id)) return priorDelivery(sql, delivery.id);
  // Cancel first, record after: a crash in between leaves no delivery row, so the forge's
  // redelivery cancels again (a no-op for runs already cancelled) instead of being a duplicate.
  await cancelPullRequestRuns(db, { repoId, number, retention });
  const rec = await sql.query({
    name: "webhook-pr-closed",
    text: `INSERT INTO webhook_delivery (provider, delivery_id, event, repo_id, outcome) VALUES ('github', $1, $2, $3::uuid, 'pr_closed')
           ON CONFLICT (provider, delivery_id) DO NOTHING RETURNING id`,
    values: [delivery.id, delivery.event, repoId],
  });
  return rec.rowCount === 1
    ? {
        status: 200 as const,
        runId: null,
        duplicate: false,
        ignored: "pull request closed: its unfinished runs were cancelled",
      }
    : priorDelivery(sql, delivery.id);
}

async function deliverySeen(sql: SqlPool, deliveryId: string): Promise<boolean> {
  const r = await sql.query({
    name: "webhook-seen",
    text: "SELECT 1 FROM webhook_delivery WHERE provider = 'github' AND delivery_id = $1",
    values: [deliveryId],
  });
  return (r.rowCount ?? 0) > 0;
}
