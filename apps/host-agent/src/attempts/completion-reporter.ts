// Delivers an attempt's completion. The same body is re-sent after network errors and 5xx; the
// server applies it once. A 409 STALE_EPOCH that follows an unanswered try most likely means our
// earlier request did commit (the attempt is finished, so our epoch is now "stale").
import {
  describeFailure,
  isRetriable,
  type CompleteRequest,
  type ControlClient,
  type JobTicket,
} from "../control-client.ts";
import type { Logger } from "@kiln/logger";
import { backoffMs, sleep } from "../timing.ts";

export type CompletionResult = "accepted" | "probably_accepted" | "refused" | "undelivered";

const COMPLETE_TIMEOUT_MS = 15_000;

export async function reportCompletion(
  client: ControlClient,
  ticket: JobTicket,
  body: CompleteRequest,
  logger: Logger,
  maxAttempts = 8,
): Promise<CompletionResult> {
  let fateUnknown = false;
  for (let attempt = 0; attempt < maxAttempts; attempt++) {
    const res = await client.complete(ticket.jobId, ticket.jobToken, body, { timeoutMs: COMPLETE_TIMEOUT_MS });
    if (res.ok) {
      logger.info("completion accepted", {
        outcome: body.outcome,
        cause: body.cause,
        job_outcome: res.data.job_outcome,
        accepted: res.data.accepted,
      });
      return "accepted";
    }
    if (res.kind === "http" && res.status === 409) {
      if (fateUnknown && res.code === "ATTEMPT.STALE_EPOCH") {
        logger.info("completion probably accepted: a retry after a lost response was refused as stale", {
          outcome: body.outcome,
          code: res.code,
        });
        return "probably_accepted";
      }
      logger.warn(`completion refused: ${res.code}`, { outcome: body.outcome, code: res.code });
      return "refused";
    }
    if (!isRetriable(res) || attempt + 1 >= maxAttempts) {
      logger.error("completion not delivered", {
        outcome: body.outcome,
        error: describeFailure(res),
        attempts: attempt + 1,
      });
      return "undelivered";
    }
    fateUnknown = true;
    const delay = backoffMs(attempt, 1_000, 15_000);
    logger.warn("completion failed; retrying with the same body", { error: describeFailure(res), retry_in_ms: delay });
    await sleep(delay);
  }
  return "undelivered";
}
