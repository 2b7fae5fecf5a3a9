import { cancelSupersededRuns, freezeRun, OUTBOX_TOPICS } from "@kiln/engine";
import { defineJob } from "./job-definition.ts";

/**
 * Freezes an accepted run: workflow bytes at the pinned commit, parsed, jobs created. Idempotent:
 * a second delivery finds the run no longer pending. An unreachable git server throws so pg-boss
 * retries; the last try records a platform failure instead of leaving the run pending forever.
 */
export const freezeRunJob = defineJob({
  name: "run-freeze",
  payload: OUTBOX_TOPICS["run.freeze"].payload,
  retryLimit: 5,
  retryDelaySeconds: 2,
  expireInSeconds: 120,
  // Freezing waits on git; a burst of pushes should not queue behind one fetch at a time.
  concurrency: 4,
  handle: async ({ db, cfg, gitCacheDir, source, registries, poolImages, log, forge }, data, job) => {
    const outcome = await freezeRun(db, {
      runId: data.runId,
      gitCacheDir,
      source,
      registries,
      poolImages,
      log: log.child({ queue: job.name, job_id: job.id }),
      finalTry: job.retryCount >= 5,
      retention: cfg.retention,
      forge,
    });
    if (outcome === "retry_later")
      throw new Error(
        `git source or image registry unreachable for run ${data.runId}; will retry (the worker log has the cause)`,
      );
    // A PR workflow with `pull_request: {cancel_superseded: true}` cancels the PR's older runs once
    // this one is frozen (the option is in the file). Also on a repeated delivery ("not_pending"),
    // so a crash between the freeze and this line is made good by pg-boss's retry.
    if (outcome === "frozen" || outcome === "not_pending") await cancelSupersededRuns(db, data.runId, cfg.retention);
  },
});
