import { reconcile } from "@kiln/engine";
import { z } from "zod";
import { defineJob } from "./job-definition.ts";

/**
 * The reconciler sweep. It is both scheduled (a cron backstop) and ticked by the workers process at
 * KILN_RECONCILE_MS; every step re-checks state under row locks, so overlapping runs are harmless.
 */
export const reconcileJob = defineJob({
  name: "reconcile",
  payload: z.object({}).passthrough(),
  retryLimit: 0,
  retryDelaySeconds: 1,
  expireInSeconds: 60,
  // The ticker sweeps in-process at sub-minute resolution; the cron is the backstop if it ever wedges.
  schedule: "* * * * *",
  tick: { everyMs: (env) => env.KILN_RECONCILE_MS, failure: "reconcile failed" },
  handle: async ({ db, cfg, log }) => {
    const r = await reconcile(db, cfg);
    if (r.fenced + r.redispatched + r.refrozen + r.runsFinished + r.preempted + r.locksReleased + r.quotaNotices > 0) {
      log.info("reconciled", { ...r });
    }
  },
});
