import type { DbOrTx } from "@kiln/db";
import { DomainError } from "@kiln/domain";

export interface AuditEventView {
  id: string;
  /** Commit order; pass the last one seen as `afterSeq` for the next page. */
  seq: string;
  kind: string;
  actor: string;
  subject: string | null;
  data: Record<string, unknown>;
  at: string;
}

export interface ListAuditEventsInput {
  orgSlug: string;
  /** Exact kind (`secret.read`) or a namespace prefix ending in a dot (`secret.`). */
  kind?: string;
  since?: Date;
  /** Cursor: only events after this sequence number. */
  afterSeq?: string;
  limit?: number;
}

/**
 * An org's audit events in commit order. Tenant scoping is in the query (the org's slug joins
 * the rows), so a caller authorised for one org can never page into another's.
 */
export async function listAuditEvents(db: DbOrTx, input: ListAuditEventsInput): Promise<AuditEventView[]> {
  const limit = Math.min(Math.max(input.limit ?? 100, 1), 500);
  if (input.afterSeq !== undefined && !/^\d{1,19}$/.test(input.afterSeq))
    throw new DomainError("REQUEST.INVALID", "after must be an audit sequence number");
  if (input.since && Number.isNaN(input.since.getTime()))
    throw new DomainError("REQUEST.INVALID", "since must be a date");
  const kind = input.kind ?? null;
  const prefix = kind?.endsWith(".") ? `${kind}%` : null;
  const rows = await db.$queryRaw<
    { id: string; seq: string; kind: string; actor: string; subject: string | null; data: unknown; at: Date }[]
  >`
    SELECT e.id::text, e.seq::text, e.kind, e.actor, e.subject, e.data, e.at
    FROM audit_event e JOIN org o ON o.id = e.org_id
    WHERE o.slug = ${input.orgSlug}
      AND (${kind}::text IS NULL OR (${prefix}::text IS NULL AND e.kind = ${kind}) OR e.kind LIKE ${prefix})
      AND (${input.since ?? null}::timestamptz IS NULL OR e.at >= ${input.since ?? null}::timestamptz)
      AND (${input.afterSeq ?? null}::bigint IS NULL OR e.seq > ${input.afterSeq ?? null}::bigint)
    ORDER BY e.seq
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
