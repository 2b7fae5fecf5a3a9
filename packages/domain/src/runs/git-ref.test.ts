import { describe, expect, it } from "vitest";
import { branchRef, fullRef, isBranchName } from "./git-ref.ts";

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
});
