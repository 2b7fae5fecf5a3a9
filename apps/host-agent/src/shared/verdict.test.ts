import { describe, expect, it } from "vitest";
import { outranks, stepFailureVerdict, verdictForStop } from "./verdict.ts";

describe("verdicts", () => {
  it("names the step, its command (80 chars) and the exit code or signal", () => {
    const long = `make ${"x".repeat(200)}`;
    expect(stepFailureVerdict(1, long, { exitCode: 2, signal: null, durationMs: 5 })).toEqual({
      outcome: "user_failure",
      cause: "step.failed",
      message: `step 2 (${long.slice(0, 80)}) exited with code 2`,
      exitCode: 2,
    });
    expect(stepFailureVerdict(0, "sleep 1", { exitCode: null, signal: "SIGKILL", durationMs: 5 })?.message).toBe(
      "step 1 (sleep 1) was killed by signal SIGKILL",
    );
    expect(stepFailureVerdict(0, "true", { exitCode: 0, signal: null, durationMs: 5 })).toBeNull();
  });

  it("maps interruptions to outcomes; a fenced attempt reports nothing", () => {
    expect(verdictForStop("cancel", { timeoutMinutes: 1 })).toMatchObject({
      outcome: "cancelled",
      cause: "run.cancelled",
    });
    expect(verdictForStop("timeout", { timeoutMinutes: 1 })).toMatchObject({
      outcome: "timed_out",
      cause: "job.timeout",
    });
    expect(verdictForStop("shutdown", { timeoutMinutes: 1 })).toMatchObject({
      outcome: "platform_failure",
      cause: "agent.shutdown",
    });
    expect(verdictForStop("lease_lost", { timeoutMinutes: 1 })).toMatchObject({
      outcome: "platform_failure",
      cause: "lease.lost",
    });
    expect(verdictForStop("fenced", { timeoutMinutes: 1 })).toBeNull();
  });

  it("lets losing the attempt override a graceful stop, never the reverse", () => {
    expect(outranks("cancel", null)).toBe(true);
    expect(outranks("timeout", "cancel")).toBe(false);
    expect(outranks("fenced", "cancel")).toBe(true);
    expect(outranks("lease_lost", "shutdown")).toBe(true);
    expect(outranks("cancel", "fenced")).toBe(false);
  });
});
