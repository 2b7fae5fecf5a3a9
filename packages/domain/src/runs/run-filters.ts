import { z } from "zod";
import { OUTCOMES } from "./outcomes.ts";
import { RUN_STATUSES } from "./run-state-machine.ts";

/**
 * Every event that creates a run (issue 33): a forge push or pull request, a manual trigger, a retry
 * or re-run of failed jobs, a schedule tick and a deploy (promotion) run. The runs list filters by any
 * of them and the API's run schema names them, so a new run-creating trigger belongs here first.
 */
export const RUN_TRIGGERS = ["push", "pull_request", "manual", "retry", "rerun_failed", "schedule", "deploy"] as const;

/** Filters shared by the runs list and its URL; every field is optional and exact-match. Browser-safe. */
export const runFilters = z.object({
  repoId: z.uuid().optional(),
  ref: z.string().min(1).max(255).optional(),
  trigger: z.enum(RUN_TRIGGERS).optional(),
  status: z.enum(RUN_STATUSES).optional(),
  outcome: z.enum(OUTCOMES).optional(),
  /** A branch name: matches a push's or manual run's refs/heads/<branch> and a PR's head branch. */
  branch: z
    .string()
    .min(1)
    .max(255)
    .refine((b) => !b.startsWith("refs/"), "a branch name without refs/heads/")
    .optional(),
  /** Runs created strictly before / at or after this instant (ISO 8601 with an offset). */
  createdBefore: z.iso.datetime({ offset: true }).optional(),
  createdAfter: z.iso.datetime({ offset: true }).optional(),
});
export type RunFilters = z.infer<typeof runFilters>;
