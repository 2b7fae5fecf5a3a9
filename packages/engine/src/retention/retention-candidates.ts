// What is expired at an instant, with everything that still needs it. One loader for the plan and
// the worker (which runs it again, for one item, under that item's row lock before evicting), so
// `kiln retention plan` and an eviction cannot disagree (docs/adr/0036).
import type { DbOrTx } from "@kiln/db";
import {
  EVICTION_BLOCKERS,
  RETENTION_CLASSES,
  type EvictionBlocker,
  type EvictionKind,
  type RetentionCandidate,
  type RetentionWindows,
} from "@kiln/domain";
import { loadRunRetention, prismaRows, stampFor } from "../shared/retention-stamp.ts";
import { ARTIFACT_BLOCKER_COLUMNS } from "../shared/artifact-blockers.ts";

export interface CandidateQuery {
  at: Date;
  /** Only this org's items (a plan for one tenant). */
  orgId?: string | null;
  /** Only this item (the worker's re-check under its lock). */
  id?: string;
  limit?: number;
}

interface Row {
  id: string;
  org_id: string;
  retention_class: string;
  expires_at: Date;
  environment_pointer: boolean;
  pointer_history: boolean;
  hold: boolean;
  consuming_run: boolean;
  retryable_run: boolean;
  live_data: boolean;
}

// A bound, sealed generation that expired, with what still needs it (artifact-blockers.ts).
const ARTIFACTS = `
  SELECT g.id::text, j.org_id::text, g.retention_class, g.expires_at,${ARTIFACT_BLOCKER_COLUMNS},
    false AS live_data
  FROM artifact_generation g
  JOIN artifact_binding b ON b.generation_id = g.id
  JOIN job_run j ON j.id = g.job_id
  JOIN workflow_run r ON r.id = g.run_id
  WHERE g.state = 'sealed' AND g.expired_at IS NULL AND g.expires_at <= $1
    AND ($2::uuid IS NULL OR j.org_id = $2::uuid) AND ($3::uuid IS NULL OR g.id = $3::uuid)
  ORDER BY g.expires_at, g.id LIMIT $4`;

const LOGS = `
  SELECT l.attempt_id::text AS id, l.org_id::text, l.retention_class, l.expires_at,
    false AS environment_pointer, false AS pointer_history, false AS hold, false AS consuming_run,
    r.status <> 'completed' OR l.state = 'open' AS retryable_run,
    false AS live_data
  FROM log_attempt l JOIN workflow_run r ON r.id = l.run_id
  WHERE l.expired_at IS NULL AND l.expires_at <= $1
    AND ($2::uuid IS NULL OR l.org_id = $2::uuid) AND ($3::uuid IS NULL OR l.attempt_id = $3::uuid)
  ORDER BY l.expires_at, l.attempt_id LIMIT $4`;

// Run metadata stays while anything of the run is still kept: a live (or unclassified) artifact or
// log. Only stamped runs are here (runs are stamped as they complete; stampFinishedRuns catches older ones).
const RUNS = `
  SELECT r.id::text, r.org_id::text, r.retention_class, r.expires_at,
    false AS environment_pointer, false AS pointer_history, false AS hold, false AS consuming_run,
    r.status <> 'completed' AS retryable_run,
    EXISTS (SELECT 1 FROM artifact_generation g JOIN artifact_binding b ON b.generation_id = g.id
            WHERE g.run_id = r.id AND g.expired_at IS NULL)
      OR EXISTS (SELECT 1 FROM log_attempt l WHERE l.run_id = r.id AND l.expired_at IS NULL
                 AND (l.expires_at IS NOT NULL OR l.next_seq > 0)) AS live_data
  FROM workflow_run r
  WHERE r.expired_at IS NULL AND r.expires_at <= $1
    AND ($2::uuid IS NULL OR r.org_id = $2::uuid) AND ($3::uuid IS NULL OR r.id = $3::uuid)
  ORDER BY r.expires_at, r.id LIMIT $4`;

const SQL: Record<EvictionKind, string> = { artifact: ARTIFACTS, log: LOGS, run_metadata: RUNS };

export async function loadCandidates(db: DbOrTx, kind: EvictionKind, q: CandidateQuery): Promise<RetentionCandidate[]> {
  const rows = await db.$queryRawUnsafe<Row[]>(SQL[kind], q.at, q.orgId ?? null, q.id ?? null, q.limit ?? 500);
  return rows.map((r) => ({
    kind,
    id: r.id,
    orgId: r.org_id,
    class: RETENTION_CLASSES.find((c) => c === r.retention_class) ?? "other",
    expiresAt: r.expires_at,
    blockers: EVICTION_BLOCKERS.filter((b: EvictionBlocker) => r[b]),
  }));
}

/**
 * The safety net for runs that finished unstamped: every path that completes a run stamps it in
 * that transaction (stampRunRetention: finishRunIfDone, cancelRun, the failed freeze), so this
 * finds only runs completed before that change. Same classifier and windows, counted from the day
 * they finished; `plan` runs it on a transaction it rolls back.
 */
export async function stampFinishedRuns(db: DbOrTx, windows: RetentionWindows, limit = 500): Promise<number> {
  const rows = await db.$queryRawUnsafe<{ id: string; finished_at: Date }[]>(
    `SELECT id::text, finished_at FROM workflow_run
     WHERE expires_at IS NULL AND finished_at IS NOT NULL AND status = 'completed' ORDER BY finished_at LIMIT $1`,
    limit,
  );
  let n = 0;
  for (const r of rows) {
    const stamp = stampFor(await loadRunRetention(prismaRows(db), r.id), "run_metadata", r.finished_at, windows);
    n += await db.$executeRawUnsafe(
      `UPDATE workflow_run SET retention_class = $2, expires_at = $3 WHERE id = $1::uuid AND expires_at IS NULL`,
      r.id,
      stamp.cls,
      stamp.expiresAt,
    );
  }
  return n;
}
