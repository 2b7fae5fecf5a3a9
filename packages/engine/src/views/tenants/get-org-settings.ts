import type { DbOrTx } from "@kiln/db";
import type { TenantScope } from "./resolve-tenant.ts";

// The org settings page (issue 9 admin UI): capacity per pool, the egress allow-list, and the
// audit trail of both, read for the resolved org only (its org_id in every WHERE clause).

export interface PoolEntitlementView {
  pool: string;
  slots: number;
  weight: number;
  hard_cap: number | null;
  /** Attempts holding a slot in this pool right now (the guarded counter the claim maintains). */
  running: number;
  updated_at: string;
}

export interface EgressEntryView {
  pattern: string;
  created_by: string;
  created_at: string;
}

type Limits = { slots: number; weight: number; hard_cap: number | null };

export type SettingsChange =
  | { kind: "entitlement"; id: string; at: string; actor: string; pool: string; before: Limits | null; after: Limits }
  | { kind: "egress"; id: string; at: string; actor: string; pattern: string; action: "allow" | "remove" };

/** A second cache writer whose bytes differed from the bound entry's (docs/adr/0014). */
interface CacheConflictView {
  id: string;
  at: string;
  repo: string;
  cache_key: string;
  bound_sha256: string;
  rejected_sha256: string;
  run_id: string;
}

export interface OrgSettingsView {
  entitlements: PoolEntitlementView[];
  egress: EgressEntryView[];
  /**
   * Build cache conflicts, newest first: missing inputs, non-determinism or corruption to look into.
   * Admins only (the issue: "shown to admins"); empty for other roles.
   */
  cache_conflicts: CacheConflictView[];
  /** The most recent changes of either kind, newest first. */
  changes: SettingsChange[];
}

const RECENT_CHANGES = 20;

export async function getOrgSettings(
  db: DbOrTx,
  scope: TenantScope,
  opts: { changes?: number } = {},
): Promise<OrgSettingsView> {
  const limit = Math.min(Math.max(opts.changes ?? RECENT_CHANGES, 1), 200);
  const [entitlements, egress, changes, conflicts] = await Promise.all([
    db.$queryRaw<(Omit<PoolEntitlementView, "updated_at"> & { updated_at: Date })[]>`
      SELECT e.pool, e.slots, e.weight, e.hard_cap, COALESCE(u.running, 0)::int AS running, e.updated_at
      FROM entitlement e LEFT JOIN org_pool_usage u ON u.org_id = e.org_id AND u.pool = e.pool
      WHERE e.org_id = ${scope.orgId}::uuid ORDER BY e.pool`,
    db.$queryRaw<{ pattern: string; created_by: string; created_at: Date }[]>`
      SELECT pattern, created_by, created_at FROM egress_rule WHERE org_id = ${scope.orgId}::uuid ORDER BY pattern`,
    // Each side is limited before the union, so both scans stay on their (org_id, at) indexes.
    db.$queryRaw<
      {
        kind: "entitlement" | "egress";
        id: bigint;
        at: Date;
        actor: string;
        subject: string;
        before: Limits | null;
        after: Limits | null;
        action: "allow" | "remove" | null;
      }[]
    >`
      (SELECT 'entitlement' AS kind, id, at, actor, pool AS subject, before, after, NULL AS action
       FROM entitlement_change WHERE org_id = ${scope.orgId}::uuid ORDER BY at DESC, id DESC LIMIT ${limit})
      UNION ALL
      (SELECT 'egress' AS kind, id, at, actor, pattern AS subject, NULL::jsonb, NULL::jsonb, action
       FROM egress_rule_change WHERE org_id = ${scope.orgId}::uuid ORDER BY at DESC, id DESC LIMIT ${limit})
      ORDER BY at DESC, kind, id DESC LIMIT ${limit}`,
    scope.role === "admin"
      ? db.$queryRaw<
          {
            id: bigint;
            at: Date;
            repo: string;
            cache_key: string;
            bound_sha256: string;
            rejected_sha256: string;
            run_id: string;
          }[]
        >`
          SELECT c.id, c.at, r.full_name AS repo, c.cache_key, c.bound_sha256, c.rejected_sha256, a.run_id
          FROM cache_conflict c JOIN repo r ON r.id = c.repo_id AND r.org_id = c.org_id JOIN attempt a ON a.id = c.attempt_id
          WHERE c.org_id = ${scope.orgId}::uuid ORDER BY c.at DESC, c.id DESC LIMIT ${limit}`
      : Promise.resolve([]),
  ]);
  return {
    entitlements: entitlements.map((e) => ({ ...e, updated_at: e.updated_at.toISOString() })),
    egress: egress.map((r) => ({ ...r, created_at: r.created_at.toISOString() })),
    cache_conflicts: conflicts.map((c) => ({ ...c, id: String(c.id), at: c.at.toISOString() })),
    changes: changes.map((c): SettingsChange => {
      const base = { id: `${c.kind}:${c.id}`, at: c.at.toISOString(), actor: c.actor };
      return c.kind === "entitlement"
        ? {
            kind: "entitlement",
            ...base,
            pool: c.subject,
            before: c.before,
            after: c.after ?? { slots: 0, weight: 1, hard_cap: null },
          }
        : { kind: "egress", ...base, pattern: c.subject, action: c.action ?? "allow" };
    }),
  };
}
