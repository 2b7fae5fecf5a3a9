import { EVICTION_BLOCKERS, EVICTION_KINDS, RETENTION_CLASSES, RETENTION_KINDS } from "@kiln/domain";
import { z } from "zod";

// Wire schemas of retention (issue 21, docs/adr/0036): holds, an org's windows, the eviction plan.

const iso = z.string().describe("ISO 8601 timestamp");
const classWindows = z.object({ release: z.number().int(), default_branch: z.number().int(), other: z.number().int() });
const windows = z.object({
  artifact: classWindows,
  log: classWindows,
  log_searchable: classWindows,
  run_metadata: classWindows,
});
const partialWindows = z.object({
  artifact: classWindows.partial().optional(),
  log: classWindows.partial().optional(),
  log_searchable: classWindows.partial().optional(),
  run_metadata: classWindows.partial().optional(),
});

export const retentionHold = z.object({
  id: z.uuid(),
  artifact_id: z.uuid(),
  org_id: z.uuid(),
  reason: z.string(),
  created_by: z.string(),
  created_at: iso,
  removed_by: z.string().nullable(),
  removed_at: iso.nullable(),
});
export const retentionHoldList = z.object({ holds: z.array(retentionHold) });
export const holdBody = z.object({ reason: z.string().min(1).max(2000) });
export const holdListQuery = z.object({
  include_removed: z.enum(["true", "false"]).optional().describe("also list lifted holds"),
});

export const orgRetention = z.object({
  platform: windows.describe("the platform's windows in days (KILN_RETENTION_WINDOWS)"),
  overrides: partialWindows.describe("the org's shortened windows"),
  effective: windows.describe("what data sealed now gets: min(override, platform)"),
});
export const windowBody = z.object({
  kind: z.enum(RETENTION_KINDS),
  class: z.enum(RETENTION_CLASSES),
  days: z.number().int().min(1).nullable().describe("at most the platform's window; null clears the override"),
});

const planEntry = z.object({
  kind: z.enum(EVICTION_KINDS),
  id: z.uuid(),
  org_id: z.uuid(),
  class: z.enum(RETENTION_CLASSES),
  expires_at: iso,
  reason: z.union([z.literal("expired"), z.enum(EVICTION_BLOCKERS)]),
});
export const retentionPlan = z.object({
  at: iso,
  evict: z.array(planEntry).describe("what a retention pass at `at` evicts (reason: expired)"),
  kept: z.array(planEntry).describe("expired but kept, with the reason (pointer, history, hold, live run, live data)"),
});
export const planQuery = z.object({ at: z.iso.datetime({ offset: true }).optional().describe("default: now") });

export const releasePatternsBody = z.object({ patterns: z.array(z.string()).max(50) });
export const releasePatterns = z.object({ repo_id: z.uuid(), release_patterns: z.array(z.string()) });
