// Log state changes (open -> sealed | truncated | gapped) on Prisma transactions, each with its
// transition_event row in the same transaction (conventions rule 8). entity = 'log'.
import type { Tx } from "@kiln/db";
import { decideLogOnAttemptEnd, type LogState, type TerminalLogState } from "@kiln/domain";

export interface LogOwner {
  id: string;
  jobId: string;
  runId: string;
  orgId: string;
  epoch: number;
}

export interface LockedLogRow {
  state: LogState;
  next_seq: number;
  stdout_bytes: bigint;
  stderr_bytes: bigint;
  stdout_dropped: bigint;
  stderr_dropped: bigint;
}

/** Locks (creating if needed) the attempt's log row; the same lock ingest takes first. */
export async function lockLogRow(tx: Tx, a: LogOwner): Promise<LockedLogRow> {
  await tx.$executeRaw`
    INSERT INTO log_attempt (attempt_id, job_id, run_id, org_id, epoch)
    VALUES (${a.id}::uuid, ${a.jobId}::uuid, ${a.runId}::uuid, ${a.orgId}::uuid, ${a.epoch})
    ON CONFLICT (attempt_id) DO NOTHING`;
  const rows = await tx.$queryRaw<LockedLogRow[]>`
    SELECT state, next_seq, stdout_bytes, stderr_bytes, stdout_dropped, stderr_dropped
    FROM log_attempt WHERE attempt_id = ${a.id}::uuid FOR UPDATE`;
  const row = rows[0];
  if (!row) throw new Error(`log row for attempt ${a.id} vanished`);
  return row;
}

export async function endLog(
  tx: Tx,
  a: LogOwner,
  to: TerminalLogState,
  reason: string,
  data: Record<string, unknown>,
  dropped: { stdout: number; stderr: number } = { stdout: 0, stderr: 0 },
): Promise<void> {
  await tx.$executeRaw`
    UPDATE log_attempt SET state = ${to}, ended_at = now(), stdout_dropped = ${dropped.stdout}, stderr_dropped = ${dropped.stderr}
    WHERE attempt_id = ${a.id}::uuid AND state = 'open'`;
  await tx.$executeRaw`
    INSERT INTO transition_event (org_id, run_id, job_id, attempt_id, entity, from_state, to_state, reason, data)
    VALUES (${a.orgId}::uuid, ${a.runId}::uuid, ${a.jobId}::uuid, ${a.id}::uuid, 'log', 'open', ${to}, ${reason}, ${JSON.stringify({ epoch: a.epoch, ...data })}::jsonb)`;
}

/**
 * Called inside every transaction that ends an attempt (completion, lease-expiry fencing): a log
 * the agent did not seal is marked gapped, never left open and never presented as complete.
 */
export async function endUnsealedLog(tx: Tx, a: LogOwner, attemptOutcome: string): Promise<void> {
  const row = await lockLogRow(tx, a);
  if (decideLogOnAttemptEnd(row.state) !== "gapped") return;
  await endLog(tx, a, "gapped", "attempt_ended_unsealed", {
    attempt_outcome: attemptOutcome,
    next_seq: row.next_seq,
    bytes: { stdout: Number(row.stdout_bytes), stderr: Number(row.stderr_bytes) },
  });
}
