import type { Db } from "@kiln/db";
import { rotateJobTokenKey } from "@kiln/engine";
import { z } from "zod";
import { defineJob } from "./job-definition.ts";

/**
 * How old the job-token signing key may get before the schedule replaces it. The retired key keeps
 * verifying for a job token's lifetime (JOB_TOKEN_TTL_MS, 26 h), so rotating never refuses a
 * running attempt; `npm run kiln -- job-key rotate` rotates at once (docs/adr/0018).
 */
const JOB_KEY_MAX_AGE_MS = 30 * 24 * 3600 * 1000;

/**
 * Issue 15: rotates the job-token key once it is older than JOB_KEY_MAX_AGE_MS. Idempotent and
 * safe from every worker at once: the engine serialises rotations under an advisory lock and
 * re-checks the age inside it, so a second run (or a racing worker) finds nothing due.
 */
export const rotateJobTokenKeyJob = defineJob({
  name: "rotate-job-token-key",
  payload: z.object({}).passthrough(),
  retryLimit: 3,
  retryDelaySeconds: 60,
  expireInSeconds: 5 * 60,
  // Job-token signing key: replaced once it is 30 days old, checked hourly (docs/adr/0018).
  schedule: "17 * * * *",
  handle: async ({ db, log }) => {
    const r = await runKeyRotation(db);
    if (r.rotated) log.info("job-token key rotated", { kid: r.kid, retired: r.retired });
  },
});

/** One pass; the handler's whole body, exported so the run-it-twice test drives exactly it. */
export function runKeyRotation(db: Db): ReturnType<typeof rotateJobTokenKey> {
  return rotateJobTokenKey(db, { ifOlderThanMs: JOB_KEY_MAX_AGE_MS });
}
