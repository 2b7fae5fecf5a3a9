// Workload identity (issue 16, docs/adr/0024-workload-identity.md): the claims of a job's OIDC ID
// token, decided from what the control plane loaded about the attempt. Pure: time and the token id
// come in as arguments.

import { isPullRequestRef } from "../runs/index.ts";

/** A token lives at most this long; a job asks again for more (GitHub's and GitLab's are similar). */
export const ID_TOKEN_MAX_TTL_S = 600;
/** Below this a token is not worth minting (the lease is about to lapse or be renewed). */
export const ID_TOKEN_MIN_TTL_S = 1;
/** The signing algorithms Kiln uses (id_token_key.alg's CHECK); tokens are signed with the first. */
export const ID_TOKEN_ALGS = ["ES256"] as const;
export const ID_TOKEN_ALG = ID_TOKEN_ALGS[0];

/**
 * An audience is the relying party's own identifier (a URL or a name like "sts.amazonaws.com").
 * Printable ASCII without spaces or quotes, so it can never smuggle anything into a header or a log.
 */
export const AUDIENCE_PATTERN = /^[\x21\x23-\x26\x28-\x7e]{1,200}$/;

export const ID_TOKEN_CLAIM_NAMES = [
  "iss",
  "aud",
  "sub",
  "exp",
  "iat",
  "nbf",
  "jti",
  "org",
  "repository",
  "repository_id",
  "ref",
  "sha",
  "workflow_path",
  "workflow_sha256",
  "run_id",
  "job_id",
  "job_name",
  "attempt",
  "trust_class",
  "event",
  "actor",
  "isolation",
  "environment",
] as const;

export interface IdTokenSubject {
  org: string;
  /** "<org>/<repo>" as the forge names it. */
  repository: string;
  repositoryId: string;
  ref: string | null;
  sha: string;
  workflowPath: string;
  workflowSha256: string | null;
  runId: string;
  jobId: string;
  jobName: string;
  epoch: number;
  trustClass: "trusted" | "untrusted";
  event: string;
  actor: string | null;
  isolation: "microvm" | "process";
  /** A deploy run's environment (issue 18): then sub names it instead of the ref. */
  environment?: string | null;
}

export interface IdTokenClaims {
  iss: string;
  aud: string;
  sub: string;
  exp: number;
  iat: number;
  nbf: number;
  jti: string;
  org: string;
  repository: string;
  repository_id: string;
  ref: string;
  sha: string;
  workflow_path: string;
  workflow_sha256: string;
  run_id: string;
  job_id: string;
  job_name: string;
  attempt: number;
  trust_class: "trusted" | "untrusted";
  event: string;
  actor: string;
  isolation: "microvm" | "process";
  /** Present only on a deploy run's tokens. */
  environment?: string;
}

/**
 * The token's lifetime in whole seconds: at most ID_TOKEN_MAX_TTL_S and never past the lease
 * (floored, so exp is never a fraction of a second beyond it). Null: not worth minting.
 */
export function idTokenWindow(nowMs: number, leaseExpiresAtMs: number): { iat: number; exp: number } | null {
  const iat = Math.floor(nowMs / 1000);
  const exp = Math.min(iat + ID_TOKEN_MAX_TTL_S, Math.floor(leaseExpiresAtMs / 1000));
  return exp - iat >= ID_TOKEN_MIN_TTL_S ? { iat, exp } : null;
}

/**
 * `repo:<org>/<repo>:ref:<ref>` (a pull request's run: `repo:<org>/<repo>:pull_request`): what outside relying parties' trust policies match on. A deploy
 * run's token names its environment instead (`repo:<org>/<repo>:environment:<env>`), so a cloud
 * role can trust "production deploys of this repo" and nothing a branch build can obtain.
 */
export function idTokenSubject(s: Pick<IdTokenSubject, "repository" | "ref" | "environment">): string {
  if (s.environment) return `repo:${s.repository}:environment:${s.environment}`;
  // A pull request's run (its retries included) names no ref in sub (issue 28): a head branch is the
  // PR author's choice, so `repo:x:ref:refs/heads/main` must never be obtainable from a PR.
  if (s.ref !== null && isPullRequestRef(s.ref)) return `repo:${s.repository}:pull_request`;
  return `repo:${s.repository}:ref:${s.ref ?? ""}`;
}

export function idTokenClaims(
  s: IdTokenSubject,
  t: { issuer: string; audience: string; jti: string; iat: number; exp: number },
): IdTokenClaims {
  return {
    iss: t.issuer,
    aud: t.audience,
    sub: idTokenSubject(s),
    exp: t.exp,
    iat: t.iat,
    nbf: t.iat,
    jti: t.jti,
    org: s.org,
    repository: s.repository,
    repository_id: s.repositoryId,
    ref: s.ref ?? "",
    sha: s.sha,
    workflow_path: s.workflowPath,
    workflow_sha256: s.workflowSha256 ?? "",
    run_id: s.runId,
    job_id: s.jobId,
    job_name: s.jobName,
    attempt: s.epoch,
    trust_class: s.trustClass,
    event: s.event,
    actor: s.actor ?? "",
    isolation: s.isolation,
    ...(s.environment ? { environment: s.environment } : {}),
  };
}

/** The issuer's discovery document (OpenID Connect Discovery 1.0, the fields relying parties read). */
export function openIdConfiguration(issuer: string, jwksUri: string) {
  return {
    issuer,
    jwks_uri: jwksUri,
    response_types_supported: ["id_token"],
    subject_types_supported: ["public"],
    id_token_signing_alg_values_supported: [ID_TOKEN_ALG],
    scopes_supported: ["openid"],
    claims_supported: [...ID_TOKEN_CLAIM_NAMES],
    introspection_endpoint: `${issuer}/v1/oauth/introspect`,
  };
}
