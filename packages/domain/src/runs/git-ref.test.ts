import { describe, expect, it } from "vitest";
import { branchRef, fullRef, isBranchName, isPullRequestRef, pullRequestRef, runCacheRef } from "./git-ref.ts";

describe("git refs", () => {
  it("turns what triggers and forges name into full refs, refusing anything else", () => {
    expect(fullRef("main")).toBe("refs/heads/main");
    expect(fullRef("feature/x")).toBe("refs/heads/feature/x");
    expect(fullRef("refs/heads/main")).toBe("refs/heads/main");
    expect(fullRef("refs/tags/v1.2")).toBe("refs/tags/v1.2");
    for (const bad of ["refs/pull/7/head", "refs/heads/", "-x", "a..b", "a//b", ".hidden", "x.lock", "a b", "", "x/"])
      expect(fullRef(bad), bad).toBeNull();
    expect(branchRef("main")).toBe("refs/heads/main");
    expect(isBranchName("release-1.0")).toBe(true);
    expect(isBranchName("refs/heads/main")).toBe(false);
  });
  it("a pull request's run has its own ref, which caches key by and nothing mistakes for a branch (issue 28)", () => {
    expect(pullRequestRef(17)).toBe("refs/pull/17/head");
    expect(isPullRequestRef("refs/pull/17/head")).toBe(true);
    for (const bad of ["refs/pull/0/head", "refs/pull/x/head", "refs/pull/17/merge", "refs/heads/main", "main"])
      expect(isPullRequestRef(bad), bad).toBe(false);
    expect(runCacheRef("refs/pull/17/head")).toBe("refs/pull/17/head");
    expect(runCacheRef("main")).toBe("refs/heads/main");
    expect(runCacheRef("refs/pull/17/merge")).toBeNull();
  });
});
