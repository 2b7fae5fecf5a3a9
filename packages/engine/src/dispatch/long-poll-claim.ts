import type { Db } from "@kiln/db";
import type { PgBoss } from "pg-boss";
import type { EngineConfig } from "../config/index.ts";
import { agentCredentialHash, authenticateAgentToken } from "../identity/index.ts";
import { observeClaim } from "../metrics/index.ts";
import type { DispatchPayload } from "../shared/outbox-topics.ts";
import { claimJob, type JobTicket } from "./claim-job.ts";

/** Wakes a waiting long-poll when the relay announces work (its NOTIFY on `kiln_dispatch`). */
export interface DispatchWakeups {
  /** Resolves on a dispatch notification, after `ms`, or when `signal` aborts, whichever is first. */
  wait(ms: number, signal?: AbortSignal): Promise<void>;
}

/** The process-level clients a long-poll claim uses. */
export interface LongPollClaimDeps {
  db: Db;
  cfg: EngineConfig;
  /** The process's pg-boss (only sends and fetches); only the FIFO baseline reads hints from it. */
  boss: Promise<PgBoss>;
  wakeups: DispatchWakeups;
}

export interface LongPollClaimRequest {
  /** The request's Authorization header: the host credential. */
  authorization: string | null;
  sessionId: string;
  claimRequestId: string;
  waitMs: number;
  /** Aborted when the agent hung up. */
  signal: AbortSignal;
}

/** A dispatch hint taken from the pool's work queue, and how to acknowledge it. */
interface Hint {
  offer: { jobId: string; generation: number };
  ack: () => Promise<void>;
}

/**
 * Long-poll claim. A dispatch hint from the pool's work queue is tried first; the queue is only a
 * hint, so the claim falls back to scanning READY jobs in PostgreSQL, and every hint is
 * acknowledged once the claim transaction has decided (the database owns recovery). Returns the
 * ticket, or null when nothing was claimed before `waitMs` passed or the agent hung up.
 */
export async function longPollClaim(deps: LongPollClaimDeps, req: LongPollClaimRequest): Promise<JobTicket | null> {
  const { db, cfg } = deps;
  // The claim proves the credential and the session's ownership in its own first statement (one
  // round trip less, ADR 0015), on every pass of the long-poll. Only the FIFO baseline needs the
  // pool up front, for its queue's name.
  const credentialHash = agentCredentialHash(req.authorization);
  const agent =
    cfg.dispatchPolicy === "fifo" ? await authenticateAgentToken(db, req.authorization, req.sessionId) : null;
  const deadline = Date.now() + req.waitMs;
  // The relay's job.dispatch queue (shared/outbox-topics.ts).
  const queue = agent ? `dispatch-${agent.pool}` : null;
  for (;;) {
    // An agent that hung up (killed mid-long-poll) must not be handed a job: nobody would run it
    // until its lease expired. The race that remains (a claim committing as it hangs up) is the
    // lease's to settle.
    if (req.signal.aborted) return null;
    const hint = await takeHint(deps.boss, queue);
    const claimStartedAt = Date.now();
    const result = await claimJob(db, cfg, {
      sessionId: req.sessionId,
      claimRequestId: req.claimRequestId,
      offer: hint ? hint.offer : null,
      credentialHash,
    }).finally(async () => {
      if (hint) await hint.ack();
    });
    observeClaim(result.kind, claimStartedAt);
    if (result.kind === "claimed") return result.ticket;
    // A hint that was stale tells nothing about other work: look again at once.
    if (hint) continue;
    if (Date.now() >= deadline) return null;
    await deps.wakeups.wait(Math.min(500, Math.max(0, deadline - Date.now())), req.signal);
  }
}

/**
 * Under the fair policy (no queue) a hint carries no order (the dispatch view decides) and the relay
 * only NOTIFYs: fetching and completing one would cost two queue round trips per claim on the web's
 * small pg-boss pool. Under FIFO (the benchmark baseline) the hinted job is tried first. A queue
 * that fails is no hint: the claim scans PostgreSQL anyway.
 */
async function takeHint(boss: Promise<PgBoss>, queue: string | null): Promise<Hint | null> {
  const q = queue ? await boss.catch(() => null) : null;
  if (!q || !queue) return null;
  const hints = await q.fetch<DispatchPayload>(queue, { batchSize: 1 }).catch(() => []);
  const hint = hints[0];
  if (!hint) return null;
  return {
    offer: { jobId: hint.data.jobId, generation: hint.data.generation },
    ack: async () => {
      await q.complete(queue, hint.id).catch(() => undefined);
    },
  };
}
