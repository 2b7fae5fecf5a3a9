import { describe, expect, it } from "vitest";
import { OUTCOMES, type Outcome } from "../runs/index.ts";
import { checkRunOf, clip, FORGE_DESCRIPTION_MAX, forgeStatusOf, jobContext, runContext } from "./forge-status.ts";
import { nextLink } from "./link-header.ts";

const done = (outcome: Outcome, extra: Partial<Parameters<typeof forgeStatusOf>[0]> = {}) =>
  forgeStatusOf({
    status: "completed",
    outcome,
    cause: "step.exit_nonzero",
    causeMessage: "step 1 (make) exited 2",
    platformRetries: 0,
    ...extra,
  });

describe("forge status of a run or job", () => {
  it("maps each of the six outcomes to the state issue 19 names", () => {
    const states = Object.fromEntries(OUTCOMES.map((o) => [o, done(o).state]));
    expect(states).toEqual({
      success: "success",
      user_failure: "failure",
      platform_failure: "error",
      cancelled: "error",
      timed_out: "failure",
      blocked_by_policy: "failure",
    });
  });

  it("says a platform failure is the platform's fault and never the user's", () => {
    const d = done("platform_failure", { cause: "lease.expired", causeMessage: null }).description;
    expect(d).toBe("Kiln platform failure, not your code: lease.expired");
    expect(d).not.toMatch(/failed in your code/);
  });

  it("names the cause of a user failure and the policy's reason for a block", () => {
    expect(done("user_failure").description).toBe(
      "Kiln: failed in your code: step.exit_nonzero (step 1 (make) exited 2)",
    );
    expect(
      done("blocked_by_policy", { cause: "policy.untrusted", causeMessage: "fork PRs need a microVM pool" })
        .description,
    ).toBe("Kiln: blocked by policy: fork PRs need a microVM pool");
  });

  it("counts platform retries on a success", () => {
    expect(done("success", { platformRetries: 1 }).description).toBe(
      "Kiln: succeeded after 1 platform retry (Kiln's fault, not your code)",
    );
    expect(done("success").description).toBe("Kiln: succeeded");
  });

  it("is pending until completed", () => {
    for (const status of ["pending", "ready", "running", "cancelling"])
      expect(forgeStatusOf({ status, outcome: null, cause: null, causeMessage: null, platformRetries: 0 }).state).toBe(
        "pending",
      );
  });

  it("never exceeds 140 characters, counting code points", () => {
    const long = "é€😀".repeat(200);
    for (const o of OUTCOMES) {
      const d = done(o, { causeMessage: long, cause: long }).description;
      expect([...d].length).toBeLessThanOrEqual(FORGE_DESCRIPTION_MAX);
    }
    expect(clip("a".repeat(141))).toHaveLength(140);
    expect(clip("a".repeat(141)).endsWith("…")).toBe(true);
    expect(clip("a".repeat(140))).toBe("a".repeat(140));
  });

  it("maps check-run conclusions (the Checks API has no error)", () => {
    expect(
      checkRunOf({ status: "running", outcome: null, cause: null, causeMessage: null, platformRetries: 0 }),
    ).toEqual({
      status: "in_progress",
      conclusion: null,
    });
    expect(
      checkRunOf({
        status: "completed",
        outcome: "platform_failure",
        cause: null,
        causeMessage: null,
        platformRetries: 0,
      }).conclusion,
    ).toBe("failure");
    expect(
      checkRunOf({ status: "completed", outcome: "timed_out", cause: null, causeMessage: null, platformRetries: 0 })
        .conclusion,
    ).toBe("timed_out");
  });

  it("names contexts by workflow path and job", () => {
    expect(runContext(".kiln/workflow.yaml")).toBe("kiln/.kiln/workflow.yaml");
    expect(jobContext(".kiln/workflow.yaml", "test")).toBe("kiln/.kiln/workflow.yaml/test");
  });
});

describe("Link header", () => {
  it("finds rel=next as GitHub sends it for cursor pagination", () => {
    // From GitHub's REST docs ("Using pagination in the REST API"), cursor form.
    const h =
      '<https://api.github.com/repos/o/r/hooks/1/deliveries?per_page=2&cursor=v1_12077215967>; rel="next", <https://api.github.com/repos/o/r/hooks/1/deliveries?per_page=2>; rel="first"';
    expect(nextLink(h)).toBe("https://api.github.com/repos/o/r/hooks/1/deliveries?per_page=2&cursor=v1_12077215967");
    expect(nextLink('<https://x/y?page=1>; rel="prev"')).toBeNull();
    expect(nextLink(null)).toBeNull();
  });
});
