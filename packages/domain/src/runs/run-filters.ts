import { z } from "zod";
import { OUTCOMES } from "./outcomes.ts";
import { RUN_STATUSES } from "./run-state-machine.ts";

export const RUN_TRIGGERS = ["push", "pull_request", "manual", "retry", "rerun_failed"] as const;

/** Filters shared by the runs list and its URL; every field is optional and exact-match. Browser-safe. */
export const runFilters = z.object({
  repoId: z.uuid().optional(),
  ref: z.string().min(1).max(255).optional(),
  trigger: z.enum(RUN_TRIGGERS).optional(),
  status: z.enum(RUN_STATUSES).optional(),
  outcome: z.enum(OUTCOMES).optional(),
});
export type RunFilters = z.infer<typeof runFilters>;
