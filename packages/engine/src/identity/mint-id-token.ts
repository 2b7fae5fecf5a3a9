// Minting a job's OIDC ID token (issue 16, ADR 0024): the host agent asks with its job token on a
// step's behalf. One transaction: the attempt must be current (running, the job's epoch, live
// lease, host not revoked: assertHostNotRevoked, shared with the broker and the grants) and stays so until commit (FOR SHARE: a completion or fence waits); the
// token is recorded by jti with an `id_token.minted` audit event and signed before commit, and
// leaves only after it.
import { randomUUID } from "node:crypto";
import { withTx, type Db, type Tx } from "@kiln/db";
import { AUDIENCE_PATTERN, DomainError, idTokenClaims, idTokenWindow, type IdTokenClaims } from "@kiln/domain";
// The attempts capability's store, not its index: a store imports no capability (docs/adr/0039).
import { currentAttemptFence, refuseStaleAttempt } from "../attempts/attempts-store.ts";
import { assertHostNotRevoked } from "../shared/host-revoked.ts";
import { recordAuditEvent } from "../audit/index.ts";
import { signEs256 } from "./es256-jws.ts";
import type { IdentityKek } from "./identity-kek.ts";
import { idTokenSigner, type IdTokenSigner } from "./id-token-keys.ts";

export interface MintIdTokenInput {
  jobId: string;
  attemptId: string;
  epoch: number;
  audience: string;
}

export interface MintedIdToken {
  value: string;
  claims: IdTokenClaims;
  expiresAt: string;
}

type Current = {
  org_id: string;
  org: string;
  repository: string;
  repository_id: string;
  ref: string | null;
  sha: string;
  workflow_path: string;
  workflow_sha256: string | null;
  run_id: string;
  job_name: string;
  trust_class: "trusted" | "untrusted";
  event: string;
  actor: string | null;
  isolation: "microvm" | "process";
  now_ms: number;
  lease_ms: number;
  /** A deploy run's environment (issue 18): the token's sub names it. */
  environment: string | null;
  /** The repo's opt-in (issue 28): without it an untrusted run gets no token. */
  untrusted_id_tokens: boolean;
};

/** Thrown inside the transaction when the signing key was retired meanwhile: sign with the new one. */
class KeyRetired extends Error {}

export async function mintIdToken(
  db: Db,
  ctx: { issuer: string; kek: IdentityKek },
  input: MintIdTokenInput,
): Promise<MintedIdToken> {
  if (!AUDIENCE_PATTERN.test(input.audience))
    throw new DomainError("REQUEST.INVALID", "audience must be 1-200 printable characters");
  let signer = await idTokenSigner(db, ctx.kek);
  for (let tries = 0; ; tries++) {
    try {
      return await withTx(db, "mint-id-token", (tx) => mintIn(tx, ctx.issuer, signer, input));
    } catch (e) {
      if (!(e instanceof KeyRetired) || tries >= 2) throw e;
      signer = await idTokenSigner(db, ctx.kek, { reload: true });
    }
  }
}

async function mintIn(tx: Tx, issuer: string, signer: IdTokenSigner, input: MintIdTokenInput): Promise<MintedIdToken> {
  // Shares the key row with other mints; a rotation's FOR UPDATE waits for us (id-token-keys.ts).
  const key = await tx.$queryRaw<{ kid: string }[]>`
    SELECT kid FROM id_token_key WHERE kid = ${signer.kid} AND retired_at IS NULL FOR SHARE`;
  if (!key[0]) throw new KeyRetired();
  await assertHostNotRevoked(tx, input.attemptId);
  // Load -> decide -> persist: the attempt row is share-locked, so it stays current until commit.
  const rows = await tx.$queryRaw<Current[]>`
    SELECT a.org_id, o.slug AS org, rp.full_name AS repository, rp.id::text AS repository_id, r.ref,
           r.commit_sha AS sha, r.workflow_path, r.workflow_hash AS workflow_sha256, r.id::text AS run_id,
           j.name AS job_name, r.trust_class, r.trigger AS event, r.actor,
           COALESCE(s.labels->>'isolation', 'process') AS isolation, rp.untrusted_id_tokens,
           (extract(epoch FROM now()) * 1000)::float8 AS now_ms,
           (extract(epoch FROM a.lease_expires_at) * 1000)::float8 AS lease_ms,
           (SELECT e.name FROM deployment d JOIN environment e ON e.id = d.environment_id
            WHERE d.run_id = r.id AND r.trigger = 'deploy') AS environment
    FROM attempt a
    JOIN job_run j ON j.id = a.job_id
    JOIN workflow_run r ON r.id = a.run_id
    JOIN repo rp ON rp.id = r.repo_id
    JOIN org o ON o.id = a.org_id
    LEFT JOIN agent_session s ON s.id = a.session_id
    WHERE ${currentAttemptFence(input)}
    FOR SHARE OF a`;
  const leaseTooShort = "the attempt's lease ends too soon to mint a token";
  const c = rows[0] ?? (await refuseStaleAttempt(tx, input, leaseTooShort));
  // Database time, whole seconds, at most ID_TOKEN_MAX_TTL_S and never past the lease.
  const window = idTokenWindow(c.now_ms, c.lease_ms);
  if (!window) throw new DomainError("ATTEMPT.LEASE_EXPIRED", leaseTooShort);
  // Issue 28 (ADR 0024, amended): an untrusted run (a fork's pull request, a non-member's push) is
  // code nobody in the org vouched for; outside trust policies written on `sub` or `repository`
  // alone would admit it, so it gets no identity unless the repo's admins opted in.
  if (c.trust_class === "untrusted" && !c.untrusted_id_tokens)
    throw new DomainError(
      "ID_TOKEN.UNTRUSTED_REFUSED",
      "untrusted runs (fork pull requests, non-members' events) get no ID token unless the repo opts in (kiln repo id-tokens <repo> --untrusted on)",
    );
  const jti = randomUUID();
  await tx.$executeRaw`
    INSERT INTO id_token (jti, org_id, run_id, job_id, attempt_id, epoch, kid, audience, issued_at, expires_at)
    VALUES (${jti}::uuid, ${c.org_id}::uuid, ${c.run_id}::uuid, ${input.jobId}::uuid, ${input.attemptId}::uuid,
            ${input.epoch}, ${signer.kid}, ${input.audience}, to_timestamp(${window.iat}), to_timestamp(${window.exp}))`;
  // The audit record commits with the token's row (ADR 0024): never the token itself, its facts.
  await recordAuditEvent(tx, {
    orgId: c.org_id,
    kind: "id_token.minted",
    actor: `agent:${input.attemptId}`,
    subject: jti,
    data: {
      jti,
      kid: signer.kid,
      audience: input.audience,
      run_id: c.run_id,
      job_id: input.jobId,
      attempt_id: input.attemptId,
      epoch: input.epoch,
      repository: c.repository,
      ref: c.ref,
      trust_class: c.trust_class,
      environment: c.environment,
      iat: window.iat,
      exp: window.exp,
    },
  });
  const claims = idTokenClaims(
    {
      org: c.org,
      repository: c.repository,
      repositoryId: c.repository_id,
      ref: c.ref,
      sha: c.sha,
      workflowPath: c.workflow_path,
      workflowSha256: c.workflow_sha256,
      runId: c.run_id,
      jobId: input.jobId,
      jobName: c.job_name,
      epoch: input.epoch,
      trustClass: c.trust_class,
      event: c.event,
      actor: c.actor,
      isolation: c.isolation,
      environment: c.environment,
    },
    { issuer, audience: input.audience, jti, ...window },
  );
  return {
    value: signEs256(signer.privateKey, { kid: signer.kid }, claims),
    claims,
    expiresAt: new Date(window.exp * 1000).toISOString(),
  };
}
