import { runScheduleTick } from "@kiln/engine";
import { z } from "zod";
import { defineJob } from "./job-definition.ts";

/**
 * The scheduler pass (issue 20, ADR 0031): admits each schedule's due slot once, at the default
 * branch's head. Scheduled per minute by pg-boss and ticked in-process by every worker at
 * KILN_SCHEDULE_TICK_MS; concurrent and repeated passes are harmless (the admission is a
 * compare-and-set on the schedule plus the slot's primary key), so it is not retried either: the
 * next pass is the retry.
 */
export const runSchedulesJob = defineJob({
  name: "run-schedules",
  payload: z.object({}).passthrough(),
  retryLimit: 0,
  retryDelaySeconds: 1,
  expireInSeconds: 120,
  // Ticked in-process by every worker, the cron as the backstop (ADR 0031).
  schedule: "* * * * *",
  tick: { everyMs: (env) => env.KILN_SCHEDULE_TICK_MS, failure: "scheduler pass failed" },
  handle: async ({ db, source, log, forge }) => {
    const r = await runScheduleTick(db, { source, log, forge });
    if (r.admitted + r.unavailable > 0) log.info("scheduler pass", { ...r });
  },
});
