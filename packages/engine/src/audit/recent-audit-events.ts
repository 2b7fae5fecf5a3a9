import type { DbOrTx } from "@kiln/db";
import type { AuditEventView } from "./list-audit-events.ts";

/**
 * The newest `limit` events of an org, newest first (the dashboard's view; the API pages forwards
 * with listAuditEvents). The org id comes from the caller's resolved tenant and scopes the query.
 */
export async function listRecentAuditEvents(
  db: DbOrTx,
  input: { orgId: string; kind?: string; since?: Date; limit?: number },
): Promise<AuditEventView[]> {
  const limit = Math.min(Math.max(input.limit ?? 200, 1), 500);
  const kind = input.kind ?? null;
  const prefix = kind?.endsWith(".") ? `${kind}%` : null;
  const rows = await db.$queryRaw<
    { id: string; seq: string; kind: string; actor: string; subject: string | null; data: unknown; at: Date }[]
  >`
    SELECT e.id::text, e.seq::text, e.kind, e.actor, e.subject, e.data, e.at
    FROM audit_event e
    WHERE e.org_id = ${input.orgId}::uuid
      AND (${kind}::text IS NULL OR (${prefix}::text IS NULL AND e.kind = ${kind}) OR e.kind LIKE ${prefix})
      AND (${input.since ?? null}::timestamptz IS NULL OR e.at >= ${input.since ?? null}::timestamptz)
    ORDER BY e.seq DESC
    LIMIT ${limit}`;
  return rows.map((r) => ({
    id: r.id,
    seq: r.seq,
    kind: r.kind,
    actor: r.actor,
    subject: r.subject,
    data: (r.data ?? {}) as Record<string, unknown>,
    at: r.at.toISOString(),
  }));
}
