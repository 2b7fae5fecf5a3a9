import { sqlPool, withTx, type Db } from "@kiln/db";
import { untrustedAllowedOn } from "@kiln/domain";
import type { EngineConfig } from "../config/index.ts";
import { platformKey } from "../identity/index.ts";
import type { SqlClient, SqlPool } from "../shared/sql-pool.ts";
import { chooseCandidates } from "./claim-candidates.ts";
import { cachedPoolPolicy, cachedRunnerStanding, poolOfSession } from "./claim-host-lookup.ts";
import { lockClaimSession } from "./claim-session-lock.ts";
import { ticketFrom, loadTicket } from "./claim-ticket.ts";
import {
  hostFacts,
  quarantined,
  type Claimed,
  type ClaimRequest,
  type ClaimResult,
  type HostRunner,
} from "./claim-types.ts";
import { cachedCapacityKind } from "./interruptible-capacity.ts";
import { tryClaim } from "./try-claim.ts";

export type { ClaimRequest, ClaimResult, JobTicket } from "./claim-types.ts";

type RoundResult =
  | { kind: "claimed"; claimed: Claimed | null; attemptId: string; replayed: boolean }
  | { kind: "none" }
  | { kind: "declined"; reason: string };

/** What the claim knows of its host before the transaction: advisory, re-checked under its locks. */
interface ClaimHost {
  org: string | null;
  runner: HostRunner;
  draining: boolean;
  trustedOnly: boolean;
  kind: Awaited<ReturnType<typeof cachedCapacityKind>>;
}

/**
 * The claim transaction (seed 000 section 7): run active, job READY, generation matches,
 * predecessors succeeded, capacity free; then a new attempt with the next epoch and a lease on
 * database time, all or nothing. Lock order is run then job, the same as completion and cancel.
 *
 * It runs as plain SQL on the Db's node-postgres pool (ADR 0015): four statements between BEGIN
 * and COMMIT, and the ticket is built from what they returned, with no read after the commit.
 */
export async function claimJob(db: Db, cfg: EngineConfig, req: ClaimRequest): Promise<ClaimResult> {
  const key = await platformKey(db);
  const sql = sqlPool(db);
  const credential = req.credentialHash ?? null;
  const host = await hostForClaim(sql, req, credential);
  const result = await claimRounds(db, sql, cfg, req, credential, host);
  if (result.kind !== "claimed") return result;
  const ticket = result.claimed
    ? ticketFrom(cfg, key, result.claimed)
    : await loadTicket(db, cfg, key, result.attemptId);
  return { kind: "claimed", ticket, replayed: result.replayed };
}

async function hostForClaim(sql: SqlPool, req: ClaimRequest, credential: string | null): Promise<ClaimHost> {
  const { pool, org, isolation, runner } = await poolOfSession(sql, req.sessionId, credential);
  // A draining or quarantined host takes no picks (issue 22): a pick counts as started in the shared
  // view, so asking for candidates it may not claim would withhold them from other hosts. Advisory
  // (cached for a second); the transaction below re-checks the runner row it reads.
  // A draining host still runs the transaction (with no candidates) so that a retried claim gets
  // its ticket back.
  const standing = await cachedRunnerStanding(sql, req.sessionId);
  if (standing.state === "quarantined") throw quarantined(standing.reason);
  const draining = standing.state === "draining";
  // Candidates leave out untrusted jobs this host may never run (advisory: the policy is cached for a
  // second here; the transaction below decides on the pool row it reads itself).
  const trustedOnly = !untrustedAllowedOn(await cachedPoolPolicy(sql, pool), hostFacts(isolation, org));
  // An interruptible pool's hosts draw background work from the queue of the pool it serves (issue 22,
  // ADR 0035); advisory like the policy above, re-checked on the locked rows.
  const kind = await cachedCapacityKind(sql, pool);
  return { org, runner, draining, trustedOnly, kind };
}

async function claimRounds(
  db: Db,
  sql: SqlPool,
  cfg: EngineConfig,
  req: ClaimRequest,
  credential: string | null,
  host: ClaimHost,
): Promise<RoundResult> {
  // Candidates are chosen outside the transaction (the fair view may need its own connection to
  // reload); picks another claimer won meanwhile fail the locked re-check and the next round takes
  // fresh ones. A few rounds bound the work of one request; the agent simply claims again.
  // One pick per round: a pick is counted as started in the shared view, so taking several would
  // withhold jobs from concurrent claimers (and from an org's hard cap) until the next reload.
  let result: RoundResult = { kind: "none" };
  const began = performance.now();
  for (let round = 0; round < 6; round++) {
    // After a round whose picks all failed, only a view loaded since this claim began is trusted.
    const viewMs = round === 0 ? cfg.dispatchViewMs : Math.min(cfg.dispatchViewMs, performance.now() - began);
    const candidates = host.draining
      ? []
      : await chooseCandidates(
          db,
          { ...cfg, dispatchViewMs: viewMs },
          host.kind.queuePool,
          host.org,
          req.offer ?? null,
          host.trustedOnly,
          host.runner,
          host.kind.interruptible,
        );
    result = await withTx(sql, "claim-job", (c) => claimInTx(c, cfg, req, credential, candidates));
    if (result.kind !== "declined" || result.reason === "no_capacity") break;
  }
  return result;
}

/** One round's transaction: lock the session, then try the candidates in order. */
async function claimInTx(
  c: SqlClient,
  cfg: EngineConfig,
  req: ClaimRequest,
  credential: string | null,
  candidates: { id: string; run_id: string }[],
): Promise<RoundResult> {
  const locked = await lockClaimSession(c, req, credential);
  if (locked.kind === "none") return locked;
  if (locked.kind === "replayed")
    return { kind: "claimed", claimed: null, attemptId: locked.attemptId, replayed: true };
  let lastReason = "none";
  for (const cand of candidates) {
    const outcome = await tryClaim(c, cfg, locked.session, cand, req);
    if (outcome.ok)
      return { kind: "claimed", claimed: outcome.claimed, attemptId: outcome.claimed.attemptId, replayed: false };
    lastReason = outcome.reason;
    if (outcome.reason === "no_capacity") break;
  }
  return candidates.length === 0 ? { kind: "none" } : { kind: "declined", reason: lastReason };
}
