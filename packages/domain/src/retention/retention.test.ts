import { describe, expect, it } from "vitest";
import { DomainError } from "../shared/errors.ts";
import { classify, refMatchesReleasePattern, releasePatternsSchema } from "./retention-classes.ts";
import {
  checkOverrides,
  dayExpiresAt,
  DEFAULT_RETENTION_WINDOWS as W,
  expiresAt,
  platformRetentionWindows,
  retentionDay,
  retentionWindowsSchema,
  windowDays,
} from "./retention-windows.ts";

const base = { defaultBranch: "main", releasePatterns: ["release/*", "refs/heads/hotfix/**"] };

describe("classify", () => {
  it("names tags and release-pattern refs release, the default branch default_branch, the rest other", () => {
    expect(classify({ ...base, trigger: "push", ref: "refs/tags/v1.2.3" })).toBe("release");
    expect(classify({ ...base, trigger: "push", ref: "refs/heads/release/2026.12" })).toBe("release");
    expect(classify({ ...base, trigger: "manual", ref: "refs/heads/hotfix/a/b" })).toBe("release");
    expect(classify({ ...base, trigger: "push", ref: "refs/heads/main" })).toBe("default_branch");
    expect(classify({ ...base, trigger: "retry", ref: "refs/heads/main" })).toBe("default_branch");
    expect(classify({ ...base, trigger: "push", ref: "refs/heads/feature/x" })).toBe("other");
    expect(classify({ ...base, trigger: "push", ref: null })).toBe("other");
  });

  it("never makes a pull request release or default_branch, whatever its head is called", () => {
    expect(classify({ ...base, trigger: "pull_request", ref: "refs/heads/release/1" })).toBe("other");
    expect(classify({ ...base, trigger: "pull_request", ref: "refs/heads/main" })).toBe("other");
    expect(classify({ ...base, trigger: "pull_request", ref: "refs/tags/v1" })).toBe("other");
  });

  it("matches * within one segment and ** across segments", () => {
    expect(refMatchesReleasePattern("refs/heads/release/1", ["release/*"])).toBe(true);
    expect(refMatchesReleasePattern("refs/heads/release/1/2", ["release/*"])).toBe(false);
    expect(refMatchesReleasePattern("refs/heads/release/1/2", ["release/**"])).toBe(true);
    expect(refMatchesReleasePattern("refs/heads/releasex", ["release"])).toBe(false);
    // Regex metacharacters in a pattern are literal.
    expect(refMatchesReleasePattern("refs/heads/v1x2", ["v1.2"])).toBe(false);
    expect(refMatchesReleasePattern("refs/heads/v1.2", ["v1.2"])).toBe(true);
  });

  it("refuses malformed release patterns", () => {
    expect(releasePatternsSchema.safeParse(["release/*"]).success).toBe(true);
    expect(releasePatternsSchema.safeParse(["re lease"]).success).toBe(false);
    expect(releasePatternsSchema.safeParse(["a/***"]).success).toBe(false);
    expect(releasePatternsSchema.safeParse([""]).success).toBe(false);
  });
});

describe("windows", () => {
  it("defaults to the seed's figures", () => {
    expect(W.artifact).toEqual({ release: 400, default_branch: 90, other: 14 });
    expect(W.log).toEqual({ release: 400, default_branch: 90, other: 90 });
    expect(W.log_searchable.other).toBe(14);
    expect(W.run_metadata.other).toBe(400);
    expect(retentionWindowsSchema.parse(W)).toEqual(W);
  });

  it("expires a whole UTC day's data at the end of that day plus the window", () => {
    expect(retentionDay(new Date("2026-01-01T23:59:59.999Z"))).toBe("2026-01-01");
    expect(dayExpiresAt("2026-01-01", 14).toISOString()).toBe("2026-01-16T00:00:00.000Z");
    const early = expiresAt(new Date("2026-01-01T00:00:00.000Z"), "other", "artifact", W);
    const late = expiresAt(new Date("2026-01-01T23:59:59.999Z"), "other", "artifact", W);
    expect(early).toEqual(late);
    // Kept at least the window: never a millisecond early, at most a day late.
    expect(late.getTime() - Date.parse("2026-01-01T23:59:59.999Z")).toBeGreaterThan(14 * 86_400_000 - 1);
  });

  it("gives each class its window for each kind", () => {
    const at = new Date("2026-03-10T12:00:00Z");
    const days = (cls: "release" | "default_branch" | "other", kind: "artifact" | "log" | "run_metadata") =>
      (expiresAt(at, cls, kind, W).getTime() - Date.parse("2026-03-10T00:00:00Z")) / 86_400_000 - 1;
    expect(days("release", "artifact")).toBe(400);
    expect(days("default_branch", "artifact")).toBe(90);
    expect(days("other", "artifact")).toBe(14);
    expect(days("release", "log")).toBe(400);
    expect(days("default_branch", "log")).toBe(90);
    expect(days("other", "log")).toBe(90);
    expect(days("other", "run_metadata")).toBe(400);
  });

  it("lets an org shorten a window and refuses one that lengthens it", () => {
    expect(() => checkOverrides(W, { artifact: { other: 7 } })).not.toThrow();
    expect(windowDays("artifact", "other", W, { artifact: { other: 7 } })).toBe(7);
    expect(windowDays("artifact", "release", W, { artifact: { other: 7 } })).toBe(400);
    const err = (() => {
      try {
        checkOverrides(W, { artifact: { other: 15 } });
      } catch (e) {
        return e;
      }
      return null;
    })();
    expect(err).toBeInstanceOf(DomainError);
    expect((err as DomainError).code).toBe("RETENTION.WINDOW_LENGTHENED");
  });

  it("never lets a stored override outlive a platform window shortened after it", () => {
    const shorter = { ...W, artifact: { ...W.artifact, other: 5 } };
    expect(windowDays("artifact", "other", shorter, { artifact: { other: 10 } })).toBe(5);
  });
});

describe("platform windows", () => {
  it("merges configuration over the defaults, and may lengthen", () => {
    const w = platformRetentionWindows({ artifact: { other: 30 } });
    expect(w.artifact).toEqual({ release: 400, default_branch: 90, other: 30 });
    expect(w.log).toEqual(W.log);
    expect(platformRetentionWindows(undefined)).toEqual(W);
    expect(() => platformRetentionWindows({ artifact: { other: 0 } })).toThrow();
  });
});
