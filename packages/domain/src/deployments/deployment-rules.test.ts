import { describe, expect, it } from "vitest";
import { decideLockRelease, envVariableNameProblem, type DeployAttemptFacts } from "./deployment-rules.ts";

const SKEW = 5_000;
const stopped: DeployAttemptFacts = {
  status: "completed",
  stoppedByAgent: true,
  leaseExpiresAtMs: 10_000,
  hostControlled: true,
};
const silent: DeployAttemptFacts = {
  status: "completed",
  stoppedByAgent: false,
  leaseExpiresAtMs: 10_000,
  hostControlled: true,
};

describe("decideLockRelease", () => {
  it("holds while the deploy run is not finished or an attempt still runs", () => {
    expect(decideLockRelease({ runFinished: false, attempts: [], nowMs: 0, clockSkewBoundMs: SKEW })).toEqual({
      kind: "hold",
      why: "run_active",
    });
    const running = { ...stopped, status: "running" as const };
    expect(decideLockRelease({ runFinished: true, attempts: [running], nowMs: 1e9, clockSkewBoundMs: SKEW }).kind).toBe(
      "hold",
    );
  });
  it("releases at once when every attempt was reported stopped (or there was none)", () => {
    expect(decideLockRelease({ runFinished: true, attempts: [stopped], nowMs: 0, clockSkewBoundMs: SKEW })).toEqual({
      kind: "release",
      reason: "attempts_stopped",
    });
    expect(decideLockRelease({ runFinished: true, attempts: [], nowMs: 0, clockSkewBoundMs: SKEW }).kind).toBe(
      "release",
    );
  });
  it("holds a silent attempt's lock until lease expiry + skew bound, and not one millisecond less", () => {
    const at = 10_000 + SKEW;
    expect(
      decideLockRelease({ runFinished: true, attempts: [stopped, silent], nowMs: at - 1, clockSkewBoundMs: SKEW }),
    ).toEqual({ kind: "hold_until", atMs: at, why: "kill_bound_pending" });
    expect(decideLockRelease({ runFinished: true, attempts: [silent], nowMs: at, clockSkewBoundMs: SKEW })).toEqual({
      kind: "release",
      reason: "kill_bound_elapsed",
    });
  });
  it("the latest silent renewal decides", () => {
    const later = { ...silent, leaseExpiresAtMs: 20_000 };
    const d = decideLockRelease({
      runFinished: true,
      attempts: [silent, later],
      nowMs: 16_000,
      clockSkewBoundMs: SKEW,
    });
    expect(d).toEqual({ kind: "hold_until", atMs: 25_000, why: "kill_bound_pending" });
  });
  it("never releases by time on a host Kiln does not control: manual, however long ago", () => {
    const orgHost = { ...silent, hostControlled: false };
    expect(decideLockRelease({ runFinished: true, attempts: [orgHost], nowMs: 1e12, clockSkewBoundMs: SKEW })).toEqual({
      kind: "manual",
      why: "host_not_controlled",
    });
    // A clean stop on such a host is still a proof.
    const clean = { ...stopped, hostControlled: false };
    expect(decideLockRelease({ runFinished: true, attempts: [clean], nowMs: 0, clockSkewBoundMs: SKEW }).kind).toBe(
      "release",
    );
  });
});

describe("envVariableNameProblem", () => {
  it("takes step-env names and refuses Kiln's namespace", () => {
    expect(envVariableNameProblem("API_URL")).toBeNull();
    expect(envVariableNameProblem("1X")).toMatch(/letter/);
    expect(envVariableNameProblem("kiln_env")).toMatch(/KILN_/);
    expect(envVariableNameProblem("A-B")).toMatch(/letter/);
  });
});

describe("bindDeployment", () => {
  it("pins the promoted generation in every job and layers the environment's variables over the file's", async () => {
    const { bindDeployment } = await import("./bind-deployment.ts");
    const { parseWorkflow } = await import("../workflow/index.ts");
    const parsed = parseWorkflow(
      "version: 1\njobs:\n  - name: deploy\n    env: {API: file, KEEP: x}\n    steps: [./deploy.sh]\n",
    );
    if (!parsed.ok) throw new Error(parsed.error.message);
    const bound = bindDeployment(parsed.definition, {
      deploymentId: "d1",
      environment: "staging",
      generationId: "g1",
      sha256: "a".repeat(64),
      artifactName: "app",
      artifactPath: ".kiln/promoted/app",
      variables: { API: "https://staging" },
    });
    const job = bound.jobs[0]!;
    expect(job.env).toMatchObject({ API: "https://staging", KEEP: "x", KILN_ENVIRONMENT: "staging" });
    expect(job.env.KILN_ARTIFACT_DIGEST).toBe(`sha256:${"a".repeat(64)}`);
    expect(job.artifacts.restore[0]).toEqual({
      fromJob: "kiln.promoted",
      name: "app",
      path: ".kiln/promoted/app",
      promoted: { generationId: "g1", sha256: "a".repeat(64) },
    });
  });
});
