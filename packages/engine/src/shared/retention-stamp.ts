// The facts a retention class is decided from, read inside the transaction that seals the data
// (docs/adr/0036): the run's trigger and ref, the repo's default branch and release patterns, and
// the org's shortened windows. One query shape for both drivers (Prisma on the artifact seal,
// node-postgres on the log archiver), so the two seal paths cannot classify differently.
import type { DbOrTx, SqlClient } from "@kiln/db";
import {
  classify,
  expiresAt,
  RETENTION_CLASSES,
  RETENTION_KINDS,
  type RetentionClass,
  type RetentionKind,
  type RetentionOverrides,
  type RetentionWindows,
} from "@kiln/domain";

/** `(sql, params) => rows`: a Prisma Tx's $queryRawUnsafe or a node-postgres client's query. */
export type QueryRows = <T>(sql: string, params: unknown[]) => Promise<T[]>;

export interface RunRetention {
  orgId: string;
  cls: RetentionClass;
  overrides: RetentionOverrides;
}

interface RunFacts {
  org_id: string;
  trigger: string;
  ref: string | null;
  default_branch: string;
  release_patterns: string[];
}

export async function loadRunRetention(q: QueryRows, runId: string): Promise<RunRetention> {
  const facts = await q<RunFacts>(
    `SELECT r.org_id::text, r.trigger, r.ref, p.default_branch, p.release_patterns
     FROM workflow_run r JOIN repo p ON p.id = r.repo_id WHERE r.id = $1::uuid`,
    [runId],
  );
  const f = facts[0];
  if (!f) throw new Error(`run ${runId} vanished while sealing its data`);
  const cls = classify({
    trigger: f.trigger,
    ref: f.ref,
    defaultBranch: f.default_branch,
    releasePatterns: f.release_patterns,
  });
  return { orgId: f.org_id, cls, overrides: await loadOrgOverrides(q, f.org_id) };
}

export async function loadOrgOverrides(q: QueryRows, orgId: string): Promise<RetentionOverrides> {
  const rows = await q<{ kind: string; class: string; days: number }>(
    "SELECT kind, class, days FROM org_retention_window WHERE org_id = $1::uuid",
    [orgId],
  );
  const out: Partial<Record<RetentionKind, Partial<Record<RetentionClass, number>>>> = {};
  for (const r of rows) {
    const kind = RETENTION_KINDS.find((k) => k === r.kind);
    const cls = RETENTION_CLASSES.find((c) => c === r.class);
    if (!kind || !cls) continue; // the table's CHECKs make this unreachable
    out[kind] = { ...out[kind], [cls]: r.days };
  }
  return out;
}

/** Class and expiry for data of `kind` produced at `producedAt` by the run. */
export function stampFor(
  run: RunRetention,
  kind: RetentionKind,
  producedAt: Date,
  windows: RetentionWindows,
): { cls: RetentionClass; expiresAt: Date } {
  return { cls: run.cls, expiresAt: expiresAt(producedAt, run.cls, kind, windows, run.overrides) };
}

/**
 * Writes a run's run-metadata class and expiry inside the transaction that completes it (status
 * 'completed', finished_at now()), so a finished run is never unclassified (docs/adr/0036). Reads
 * finished_at back rather than taking a clock: the expiry counts from exactly the stored instant.
 * Guarded on expires_at IS NULL: a stamp already there (a re-delivered completion) is kept.
 */
export async function stampRunRetention(tx: DbOrTx, runId: string, windows: RetentionWindows): Promise<void> {
  const q = prismaRows(tx);
  const [run] = await q<{ finished_at: Date | null }>("SELECT finished_at FROM workflow_run WHERE id = $1::uuid", [
    runId,
  ]);
  if (!run?.finished_at) throw new Error(`run ${runId} is stamped before it has finished`);
  const stamp = stampFor(await loadRunRetention(q, runId), "run_metadata", run.finished_at, windows);
  await tx.$executeRawUnsafe(
    "UPDATE workflow_run SET retention_class = $2, expires_at = $3 WHERE id = $1::uuid AND expires_at IS NULL",
    runId,
    stamp.cls,
    stamp.expiresAt,
  );
}

/** A Prisma transaction as QueryRows. */
export function prismaRows(tx: {
  $queryRawUnsafe: <T = unknown>(sql: string, ...params: unknown[]) => Promise<T>;
}): QueryRows {
  return <T>(sql: string, params: unknown[]) => tx.$queryRawUnsafe<T[]>(sql, ...params);
}

/** A node-postgres client as QueryRows. */
export function pgRows(c: Pick<SqlClient, "query">): QueryRows {
  return async <T>(sql: string, params: unknown[]) => (await c.query<Record<string, unknown>>(sql, params)).rows as T[];
}
