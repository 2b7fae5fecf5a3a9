// POST /v1/agent/jobs/{job_id}/logs/seal: the agent's declaration that it sent everything it
// captured. Accepted only when the journal holds exactly that, so "sealed" means complete.
import { withTx, type Db, type Tx } from "@kiln/db";
import { decideHeartbeat, decideSeal, DomainError, type LogSealDeclaration } from "@kiln/domain";
import type { LogWriter } from "./append-log-chunks.ts";
import { endLog, lockLogRow, type LogOwner } from "./log-transitions.ts";

export async function sealLog(
  db: Db,
  writer: LogWriter,
  declared: LogSealDeclaration,
): Promise<{ state: "sealed" | "truncated" }> {
  return withTx(db, "seal-log", async (tx) => {
    const owner = await loadOwner(tx, writer);
    // Log row first, then the (unlocked) liveness check: the same order as ingest, see append-log-chunks.
    const row = await lockLogRow(tx, owner);
    await assertCurrentAttempt(tx, writer);
    const decision = decideSeal({
      state: row.state,
      position: {
        nextSeq: row.next_seq,
        committed: { stdout: Number(row.stdout_bytes), stderr: Number(row.stderr_bytes) },
      },
      dropped: { stdout: Number(row.stdout_dropped), stderr: Number(row.stderr_dropped) },
      declared,
    });
    if (decision.kind === "already") return { state: decision.state };
    await endLog(
      tx,
      owner,
      decision.to,
      "sealed_by_agent",
      { next_seq: declared.nextSeq, bytes: declared.bytes, dropped_bytes: declared.dropped },
      declared.dropped,
    );
    return { state: decision.to };
  });
}

async function loadOwner(tx: Tx, w: LogWriter): Promise<LogOwner> {
  const rows = await tx.$queryRaw<{ job_id: string; run_id: string; org_id: string; epoch: number }[]>`
    SELECT job_id, run_id, org_id, epoch FROM attempt WHERE id = ${w.attemptId}::uuid`;
  const a = rows[0];
  if (!a || a.job_id !== w.jobId) throw new DomainError("ATTEMPT.NOT_FOUND", "unknown attempt");
  return { id: w.attemptId, jobId: a.job_id, runId: a.run_id, orgId: a.org_id, epoch: a.epoch };
}

async function assertCurrentAttempt(tx: Tx, w: LogWriter): Promise<void> {
  const rows = await tx.$queryRaw<
    { epoch: number; status: "running" | "completed"; current_epoch: number; lease_live: boolean }[]
  >`
    SELECT a.epoch, a.status, j.current_epoch, a.lease_expires_at > now() AS lease_live
    FROM attempt a JOIN job_run j ON j.id = a.job_id WHERE a.id = ${w.attemptId}::uuid`;
  const a = rows[0];
  if (!a) throw new DomainError("ATTEMPT.NOT_FOUND", "unknown attempt");
  decideHeartbeat({
    job: { currentEpoch: a.current_epoch },
    attempt: { epoch: a.epoch, status: a.status, leaseLive: a.lease_live },
    reportedEpoch: w.epoch,
  });
}
