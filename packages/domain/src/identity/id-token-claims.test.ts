import { describe, expect, it } from "vitest";
import {
  AUDIENCE_PATTERN,
  ID_TOKEN_MAX_TTL_S,
  idTokenClaims,
  idTokenSubject,
  idTokenWindow,
  openIdConfiguration,
} from "./id-token-claims.ts";

describe("ID token lifetime", () => {
  const now = Date.UTC(2026, 11, 2, 0, 0, 0, 400);
  it("is capped at 10 minutes under a long lease", () => {
    expect(idTokenWindow(now, now + 3600_000)).toEqual({
      iat: Math.floor(now / 1000),
      exp: Math.floor(now / 1000) + ID_TOKEN_MAX_TTL_S,
    });
  });
  it("never ends after the lease: exp is floored to it", () => {
    const w = idTokenWindow(now, now + 20_900);
    expect(w?.exp).toBe(Math.floor((now + 20_900) / 1000));
    expect((w?.exp ?? 0) * 1000).toBeLessThanOrEqual(now + 20_900);
  });
  it("is not minted when less than a whole second of lease is left", () => {
    expect(idTokenWindow(now, now + 500)).toBeNull();
    expect(idTokenWindow(now, now - 1)).toBeNull();
  });
});

describe("ID token claims", () => {
  const subject = {
    org: "acme",
    repository: "acme/app",
    repositoryId: "r1",
    ref: "refs/heads/main",
    sha: "a".repeat(40),
    workflowPath: ".kiln/workflow.yaml",
    workflowSha256: null,
    runId: "run",
    jobId: "job",
    jobName: "deploy",
    epoch: 3,
    trustClass: "untrusted" as const,
    event: "pull_request",
    actor: null,
    isolation: "microvm" as const,
  };
  it("names the repository and ref in sub and carries the epoch and trust class", () => {
    const c = idTokenClaims(subject, { issuer: "https://k", audience: "aud", jti: "j", iat: 10, exp: 20 });
    expect(c).toMatchObject({
      sub: "repo:acme/app:ref:refs/heads/main",
      attempt: 3,
      trust_class: "untrusted",
      nbf: 10,
      actor: "",
      workflow_sha256: "",
    });
    expect(idTokenSubject({ repository: "acme/app", ref: null })).toBe("repo:acme/app:ref:");
    // A pull request's run (issue 28): no ref in sub, whatever its head branch was called.
    expect(idTokenSubject({ repository: "acme/app", ref: "refs/pull/9/head" })).toBe("repo:acme/app:pull_request");
    expect(openIdConfiguration("https://k", "https://k/jwks").claims_supported).toEqual(
      expect.arrayContaining(Object.keys(c)),
    );
  });
  it("a deploy run's token names the environment in sub and in its own claim; others carry none", () => {
    const c = idTokenClaims(
      { ...subject, environment: "production" },
      { issuer: "https://k", audience: "aud", jti: "j", iat: 10, exp: 20 },
    );
    expect(c.sub).toBe("repo:acme/app:environment:production");
    expect(c.environment).toBe("production");
    const plain = idTokenClaims(subject, { issuer: "https://k", audience: "aud", jti: "j", iat: 10, exp: 20 });
    expect("environment" in plain).toBe(false);
    expect(openIdConfiguration("https://k", "https://k/jwks").claims_supported).toContain("environment");
  });
  it("accepts only printable audiences without spaces or quotes", () => {
    for (const ok of ["sts.amazonaws.com", "https://deploy.example/x?y=1", "api://AzureADTokenExchange"])
      expect(AUDIENCE_PATTERN.test(ok)).toBe(true);
    for (const bad of ["", "a b", 'a"b', "a'b", "a\nb", "x".repeat(201), "é"])
      expect(AUDIENCE_PATTERN.test(bad)).toBe(false);
  });
});
