// The audit trail: append-only records of changes to configuration, credentials and secrets, and of
// every secret read and token mint. Written in the transaction of the change it records.
export {
  recordAuditEvent,
  recordAuditEventSql,
  type AuditEventInput,
  type AuditEventRef,
} from "./record-audit-event.ts";
export { listAuditEvents, type AuditEventView, type ListAuditEventsInput } from "./list-audit-events.ts";
export { listRecentAuditEvents } from "./recent-audit-events.ts";
