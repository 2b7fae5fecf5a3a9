import type { SqlClient, Tx } from "@kiln/db";

// The audit trail is written inside the transaction of the change it records: the record and the
// change commit together or not at all, and a secret read's record is committed before the value
// leaves the broker (issue 16). The table refuses UPDATE and DELETE (migration 0013).

export interface AuditEventInput {
  /** The org the event belongs to; null for platform-wide events. */
  orgId: string | null;
  /** Namespaced lower-case kind, e.g. `secret.read`, `id_token.minted`, `member.role_changed`. */
  kind: string;
  /** `web:<login>`, `cli:<user>`, `token:<id>`, `agent:<attempt id>`, `system:<worker>`. */
  actor: string;
  /** What the event concerns (a secret's scoped name, a token id), for filtering; optional. */
  subject?: string | null;
  /** The event's facts. Never a secret value, a token or a key. */
  data?: Record<string, unknown>;
}

export interface AuditEventRef {
  id: string;
  seq: string;
  at: string;
}

const KIND = /^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$/;

function check(e: AuditEventInput): void {
  // Kinds and actors come from our own code, never from a request: a bad one is a programming error
  // (a plain Error, a 500 in tests), named clearly instead of as the database's CHECK violation.
  if (!KIND.test(e.kind)) throw new Error(`audit kind ${e.kind} is not namespaced (e.g. secret.read)`);
  if (e.actor.length === 0 || e.actor.length > 200) throw new Error("audit actor must be 1..200 characters");
}

const INSERT = `INSERT INTO audit_event (org_id, kind, actor, subject, data)
  VALUES ($1::uuid, $2, $3, $4, $5::jsonb) RETURNING id::text, seq::text, at`;

/** Appends one audit event inside an open Prisma transaction. */
export async function recordAuditEvent(tx: Tx, e: AuditEventInput): Promise<AuditEventRef> {
  check(e);
  const rows = await tx.$queryRawUnsafe<{ id: string; seq: string; at: Date }[]>(
    INSERT,
    e.orgId,
    e.kind,
    e.actor,
    e.subject ?? null,
    JSON.stringify(e.data ?? {}),
  );
  const row = rows[0];
  if (!row) throw new Error("audit_event insert returned no row");
  return { id: row.id, seq: row.seq, at: row.at.toISOString() };
}

/** The same, inside a plain node-postgres transaction (the hot paths of ADR 0015). */
export async function recordAuditEventSql(client: SqlClient, e: AuditEventInput): Promise<AuditEventRef> {
  check(e);
  const res = await client.query<{ id: string; seq: string; at: Date }>({
    name: "audit-event-insert",
    text: INSERT,
    values: [e.orgId, e.kind, e.actor, e.subject ?? null, JSON.stringify(e.data ?? {})],
  });
  const row = res.rows[0];
  if (!row) throw new Error("audit_event insert returned no row");
  return { id: row.id, seq: row.seq, at: row.at.toISOString() };
}
