import { randomUUID } from "node:crypto";
import type { Db } from "@kiln/db";
import { completeAttempt } from "../../src/attempts/complete-attempt.ts";
import { claimJob, type JobTicket } from "../../src/dispatch/claim-job.ts";
import { TEST_CFG } from "../support.ts";

export interface UsageRow {
  attempt_id: string;
  org_id: string;
  repo_id: string;
  pool: string;
  size: string;
  isolation: string;
  trust_class: string;
  outcome: string;
  cause: string | null;
  seconds: number;
  interruptible: boolean;
  self_hosted: boolean;
  billable: boolean;
}

export async function claim(db: Db, sessionId: string): Promise<JobTicket> {
  const r = await claimJob(db, TEST_CFG, { sessionId, claimRequestId: randomUUID() });
  if (r.kind !== "claimed") throw new Error(`expected a claim, got ${JSON.stringify(r)}`);
  return r.ticket;
}

export function complete(
  db: Db,
  ticket: JobTicket,
  outcome: "success" | "user_failure" | "platform_failure" | "cancelled" = "success",
  cause?: string,
) {
  return completeAttempt(db, TEST_CFG, {
    attemptId: ticket.attemptId,
    jobId: ticket.jobId,
    epoch: ticket.epoch,
    outcome,
    ...(cause ? { cause } : {}),
    sandboxDestroyed: true,
  });
}

/** Makes a running attempt look as if it was claimed `seconds` ago (how long it ran is what is metered). */
export async function backdate(db: Db, attemptId: string, seconds: number): Promise<void> {
  await db.$executeRaw`UPDATE attempt SET claimed_at = now() - make_interval(secs => ${seconds}) WHERE id = ${attemptId}::uuid`;
}

export async function usageOf(db: Db, attemptId: string): Promise<UsageRow[]> {
  return db.$queryRaw<UsageRow[]>`
    SELECT attempt_id, org_id, repo_id, pool, size, isolation, trust_class, outcome, cause, seconds, interruptible,
           self_hosted, billable
    FROM usage_event WHERE attempt_id = ${attemptId}::uuid`;
}

export async function tallySeconds(db: Db, orgId: string): Promise<number> {
  const r = await db.$queryRaw<{ s: bigint }[]>`
    SELECT COALESCE(sum(seconds), 0)::bigint AS s FROM org_minute_tally
    WHERE org_id = ${orgId}::uuid AND month = date_trunc('month', now() AT TIME ZONE 'UTC')::date`;
  return Number(r[0]?.s ?? 0n);
}
