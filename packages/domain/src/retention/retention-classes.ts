// Retention classes (issue 21, docs/adr/0036-retention-by-provenance.md). A class is a fact about
// what produced the data, decided once when the data is sealed from the run's trigger and ref, so
// eviction never has to re-derive intent later (seed 002, "retention by provenance").
import { z } from "zod";
import type { RUN_TRIGGERS } from "../runs/run-filters.ts";

type RunTrigger = (typeof RUN_TRIGGERS)[number];

export const RETENTION_CLASSES = ["release", "default_branch", "other"] as const;
export type RetentionClass = (typeof RETENTION_CLASSES)[number];

/**
 * A release pattern is a glob over a full ref: `*` matches within one path segment, `**` across
 * segments. A bare pattern (no `refs/` prefix) names branches, as repo settings usually do:
 * `release/*` means `refs/heads/release/*`. Tags are always release, so patterns are for branches.
 */
export const releasePatternSchema = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[A-Za-z0-9._/*-]+$/, "a release pattern uses letters, digits, . _ - / and *")
  .refine((p) => !p.includes("***") && !p.includes("//"), "a release pattern has no *** and no //");

export const releasePatternsSchema = z.array(releasePatternSchema).max(50);

function patternToRegExp(pattern: string): RegExp {
  const full = pattern.startsWith("refs/") ? pattern : `refs/heads/${pattern}`;
  let src = "";
  for (let i = 0; i < full.length; i++) {
    const c = full[i] as string;
    if (c === "*" && full[i + 1] === "*") {
      src += ".*";
      i++;
    } else if (c === "*") src += "[^/]*";
    else src += c.replace(/[.\\+?^${}()|[\]-]/g, "\\$&");
  }
  return new RegExp(`^${src}$`);
}

export function refMatchesReleasePattern(ref: string, patterns: readonly string[]): boolean {
  return patterns.some((p) => patternToRegExp(p).test(ref));
}

export interface ClassifyInput {
  trigger: RunTrigger | string;
  /** The run's full ref (refs/heads/x, refs/tags/x); null when the run has none. */
  ref: string | null;
  /** The repo's default branch name, without refs/heads/. */
  defaultBranch: string;
  releasePatterns: readonly string[];
}

/**
 * Pull requests are always `other`: their code is proposed, not merged, and a head branch named
 * like a release must not buy 400 days. A tag is a release by definition. Retries and re-runs carry
 * their parent's ref, so they classify like it.
 */
export function classify(input: ClassifyInput): RetentionClass {
  if (input.trigger === "pull_request" || input.ref === null) return "other";
  if (input.ref.startsWith("refs/tags/")) return "release";
  if (refMatchesReleasePattern(input.ref, input.releasePatterns)) return "release";
  if (input.ref === `refs/heads/${input.defaultBranch}`) return "default_branch";
  return "other";
}
