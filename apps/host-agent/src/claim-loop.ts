// One claim loop per slot: claim (long-poll) -> run the job -> claim again. N loops = at most N
// concurrent jobs.
import { randomUUID } from "node:crypto";
import type { AgentSession } from "./agent-session.ts";
import { describeFailure, isRetriable, type ControlClient, type JobTicket } from "./control-client.ts";
import { FatalAgentError } from "./errors.ts";
import type { JobRunner } from "./job-runner.ts";
import type { Logger } from "@kiln/logger";
import { backoffMs, monotonicNow, sleep } from "./timing.ts";

// A lost claim response must not leak an attempt: the server answers a repeated claim_request_id
// with the same ticket, so network errors and 5xx are retried with the *same* id this many times.
const SAME_ID_RETRIES = 5;
// Extra time over wait_ms before a long-poll counts as lost.
const CLAIM_TIMEOUT_SLACK_MS = 15_000;
// A 204 faster than this (a server that does not long-poll, or wait_ms = 0) is followed by a pause
// so idle agents do not hammer the control plane.
const FAST_EMPTY_CLAIM_MS = 500;
const EMPTY_CLAIM_PAUSE_MS = 1_000;
// Between claims of a quarantined host: lifting the quarantine takes effect within this.
const QUARANTINED_PAUSE_MS = 2_000;

export interface ClaimLoopDeps {
  client: ControlClient;
  session: AgentSession;
  runner: JobRunner;
  waitMs: number;
  logger: Logger;
  shutdown: AbortSignal;
}

type ClaimOutcome =
  | { kind: "ticket"; ticket: JobTicket; claimedAt: number }
  | { kind: "empty"; tookMs: number }
  | { kind: "failed" };

export class ClaimLoop {
  private readonly log: Logger;
  private quarantined = false;

  constructor(
    slot: number,
    private readonly deps: ClaimLoopDeps,
  ) {
    this.log = deps.logger.child({ slot });
  }

  /** Runs until shutdown. Rejects only with FatalAgentError. */
  async run(): Promise<void> {
    const { shutdown } = this.deps;
    let failures = 0;
    while (!shutdown.aborted) {
      const outcome = await this.claimOnce();
      if (outcome.kind === "ticket") {
        failures = 0;
        await this.deps.runner.run(outcome.ticket, outcome.claimedAt);
      } else if (outcome.kind === "empty") {
        failures = 0;
        if (outcome.tookMs < FAST_EMPTY_CLAIM_MS) await sleep(EMPTY_CLAIM_PAUSE_MS, shutdown);
      } else {
        await sleep(backoffMs(failures++, 1_000, 30_000), shutdown);
      }
    }
  }

  private async claimOnce(): Promise<ClaimOutcome> {
    const { client, session, shutdown, waitMs } = this.deps;
    const sessionId = await session.current();
    if (!sessionId) return { kind: "empty", tookMs: Infinity }; // shutting down
    const claimRequestId = randomUUID();
    for (let attempt = 0; ; attempt++) {
      const startedAt = monotonicNow();
      const res = await client.claim(
        { session_id: sessionId, claim_request_id: claimRequestId, wait_ms: waitMs },
        { timeoutMs: waitMs + CLAIM_TIMEOUT_SLACK_MS, signal: shutdown },
      );
      if (res.ok) {
        if (this.quarantined) this.log.info("quarantine lifted; claiming again");
        this.quarantined = false;
        if (res.data) return { kind: "ticket", ticket: res.data, claimedAt: monotonicNow() };
        return { kind: "empty", tookMs: monotonicNow() - startedAt };
      }
      if (shutdown.aborted) return { kind: "empty", tookMs: Infinity };
      if (res.kind === "http" && (res.status === 401 || res.status === 403)) {
        throw new FatalAgentError(
          `the control plane rejected the host credential (KILN_AGENT_TOKEN or the state directory's) on claim: ${describeFailure(res)}`,
        );
      }
      // Quarantined (issue 22): claims are refused until an admin lifts it; keep asking, quietly.
      if (res.kind === "http" && res.code === "RUNNER.QUARANTINED") {
        if (!this.quarantined)
          this.log.warn("host quarantined; claiming nothing until it is lifted", { error: res.message });
        this.quarantined = true;
        await sleep(QUARANTINED_PAUSE_MS, shutdown);
        return { kind: "empty", tookMs: Infinity };
      }
      if (res.kind === "http" && res.status === 404 && res.code === "SESSION.NOT_FOUND") {
        session.invalidate(sessionId);
        return { kind: "empty", tookMs: Infinity };
      }
      if (isRetriable(res) && attempt < SAME_ID_RETRIES) {
        const delay = backoffMs(attempt, 500, 10_000);
        this.log.warn("claim failed; retrying with the same claim_request_id", {
          error: describeFailure(res),
          claim_request_id: claimRequestId,
          retry_in_ms: delay,
        });
        await sleep(delay, shutdown);
        continue;
      }
      // A 200 we cannot parse means an attempt was probably assigned to us and is now stranded
      // until its lease expires and the control plane re-dispatches it.
      const level = res.kind === "protocol" ? "error" : "warn";
      this.log[level]("claim failed; giving up on this claim_request_id", {
        error: describeFailure(res),
        claim_request_id: claimRequestId,
      });
      return { kind: "failed" };
    }
  }
}
