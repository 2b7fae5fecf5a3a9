import { deliverRunStatuses, OUTBOX_TOPICS } from "@kiln/engine";
import { defineJob } from "./job-definition.ts";

/**
 * Delivers a run's commit statuses (and check runs, as an App) to the forge (ADR 0028). Queued by
 * the outbox relay for every forge.status row, one per run at a time (stately queue, singleton key
 * = run id: a burst of changes to one run collapses into one queued delivery that reads the latest
 * state). An outage throws, so pg-boss retries with exponential backoff; a rate limit is not an
 * error: the delivery is re-queued to start when the forge said (Retry-After / x-ratelimit-reset).
 * Idempotent: what was delivered is recorded per context, and a second run finds nothing to send.
 */
export const forgeStatusJob = defineJob({
  name: "forge-status",
  payload: OUTBOX_TOPICS["forge.status"].payload,
  retryLimit: 12,
  retryDelaySeconds: 1,
  retryDelayMaxSeconds: 60,
  expireInSeconds: 120,
  policy: "stately",
  concurrency: 4,
  handle: async ({ db, boss, forge, log }, data, job) => {
    const r = await deliverRunStatuses(db, forge, data.runId);
    if (r.kind === "wait") {
      log.info("forge rate limit: statuses wait", {
        run_id: data.runId,
        retry_after_ms: r.retryAfterMs,
        job_id: job.id,
      });
      await boss.send(forgeStatusJob.name, data, {
        singletonKey: data.runId,
        startAfter: Math.ceil(r.retryAfterMs / 1000),
      });
    }
  },
});
