import { describe, expect, it } from "vitest";
import { artifactChoiceLabel } from "./artifact-choice.ts";

describe("artifactChoiceLabel (the promotion picker's option text)", () => {
  const a = {
    artifactId: "0f0e0d0c-0000-4000-8000-000000000001",
    name: "app",
    job: "build",
    commitSha: "a1b2c3d4e5f60718293a4b5c6d7e8f9012345678",
    digest: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    sealedAt: "2026-12-08T10:00:00.000Z",
    attestation: "logged" as const,
  };
  const now = Date.parse("2026-12-08T10:03:00.000Z");

  it("names the artifact, its job, commit, digest start and age, never its id", () => {
    const label = artifactChoiceLabel(a, now);
    expect(label).toBe("app (build) · a1b2c3d4 · sha256:9f86d081884c · 3m ago");
    expect(label).not.toContain(a.artifactId);
  });
  it("says when the attestation was verified, and takes a digest with its algorithm prefix", () => {
    expect(artifactChoiceLabel({ ...a, digest: `sha256:${a.digest}`, attestation: "verified" }, now)).toBe(
      "app (build) · a1b2c3d4 · sha256:9f86d081884c · 3m ago · verified",
    );
  });
});
