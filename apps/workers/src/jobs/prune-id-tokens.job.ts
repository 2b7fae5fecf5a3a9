import type { Db } from "@kiln/db";
import { pruneIdTokens } from "@kiln/engine";
import { z } from "zod";
import { defineJob } from "./job-definition.ts";

/**
 * Issue 16 (docs/adr/0024): deletes expired ID-token records and signing keys past their overlap.
 * Idempotent: it deletes by age only, so a second run (or another worker at once) finds less or
 * nothing; every row it removes is one no verification can use any more.
 */
export const pruneIdTokensJob = defineJob({
  name: "prune-id-tokens",
  payload: z.object({}).passthrough(),
  retryLimit: 3,
  retryDelaySeconds: 60,
  expireInSeconds: 5 * 60,
  // ID-token records an hour past expiry and keys past their overlap (docs/adr/0024).
  schedule: "*/15 * * * *",
  handle: async ({ db, log }) => {
    const r = await runIdTokenPrune(db);
    if (r.tokens > 0 || r.keys > 0) log.info("expired ID tokens pruned", r);
  },
});

/** One pass; the handler's whole body, exported so the run-it-twice test drives exactly it. */
export function runIdTokenPrune(db: Db): ReturnType<typeof pruneIdTokens> {
  return pruneIdTokens(db);
}
