// Private checkouts (issue 28, docs/adr/0028 amended): clone URLs carry no userinfo any more, so a
// private repo's checkout needs the repo's forge credential, handed to the agent's own git fetch.
// Asked with the job token for the job's current, live attempt on a host that is not revoked; given
// only for an http(s) clone URL on the forge's own host (a clone URL pointing elsewhere never
// receives the forge's token), as `x-access-token` basic auth (what GitHub accepts for both a
// token and an App installation token). It never enters the ticket, a log, a step or provenance.
import { withTx, type Db } from "@kiln/db";
import { DomainError } from "@kiln/domain";
import { isLoopbackHost } from "@kiln/oci";
import { assertHostNotRevoked } from "../shared/host-revoked.ts";
import { credentialFor, loadRepoForge } from "./credentials.ts";
import type { ForgeConfig } from "./forge-config.ts";

export interface SourceCredentialAnswer {
  credential: { username: string; password: string; scope: string } | null;
  reason: string | null;
}

/** The host git serves from, for the forge's API URL: api.github.com -> github.com; GHES's /api/v3 is on its own host. */
function forgeGitHost(apiUrl: string): string {
  const host = new URL(apiUrl).hostname.toLowerCase();
  return host.startsWith("api.") ? host.slice(4) : host;
}

/** Why this clone URL may not receive the forge's credential, or null when it may. */
function credentialRefusal(cloneUrl: string, forge: ForgeConfig): string | null {
  let url: URL;
  try {
    url = new URL(cloneUrl);
  } catch {
    return "the clone URL is not an http(s) URL";
  }
  if (url.protocol !== "https:" && !(url.protocol === "http:" && isLoopbackHost(url.hostname)))
    return "the clone URL is not https://";
  if (url.username || url.password) return "the clone URL carries its own userinfo";
  if (url.hostname.toLowerCase() !== forgeGitHost(forge.apiUrl))
    return `the clone URL's host is not the forge's (${forgeGitHost(forge.apiUrl)})`;
  return null;
}

/**
 * The repo's forge credential for a control-plane fetch (the workflow file at freeze), or null when
 * it has none or its clone URL may not receive it. Same rule as the agent's.
 */
export async function forgeCredentialForFetch(
  db: Db,
  forge: ForgeConfig,
  repoId: string,
  cloneUrl: string,
): Promise<{ username: string; password: string } | null> {
  if (credentialRefusal(cloneUrl, forge)) return null;
  const cred = await credentialFor(forge, await loadRepoForge(db, repoId));
  return cred.kind === "none" ? null : { username: "x-access-token", password: bareToken(cred.auth) };
}

const bareToken = (auth: string) => auth.replace(/^Bearer /, "");

export async function issueSourceCredential(
  db: Db,
  forge: ForgeConfig,
  claims: { attemptId: string; jobId: string; epoch: number },
  report: { epoch: number },
): Promise<SourceCredentialAnswer> {
  if (report.epoch !== claims.epoch)
    throw new DomainError("ATTEMPT.STALE_EPOCH", `epoch ${report.epoch} is not the epoch of this job token`);
  // The attempt fixes the repo: a job token names one attempt, whose run names one repo, so a job
  // of another repo (or org) can only ever receive its own repo's credential.
  const ctx = await withTx(db, "source-credential", async (tx) => {
    const rows = await tx.$queryRaw<{ repo_id: string; clone_url: string }[]>`
      SELECT rp.id AS repo_id, rp.clone_url
      FROM attempt a JOIN job_run j ON j.id = a.job_id JOIN workflow_run r ON r.id = a.run_id JOIN repo rp ON rp.id = r.repo_id
      WHERE a.id = ${claims.attemptId}::uuid AND a.job_id = ${claims.jobId}::uuid AND a.epoch = ${claims.epoch}
        AND a.status = 'running' AND j.current_epoch = a.epoch AND a.lease_expires_at > now()
        AND rp.org_id = a.org_id`;
    const row = rows[0];
    if (!row)
      throw new DomainError("ATTEMPT.STALE_EPOCH", `epoch ${claims.epoch} is not the job's current, live attempt`);
    await assertHostNotRevoked(tx, claims.attemptId);
    return row;
  });
  const refusal = credentialRefusal(ctx.clone_url, forge);
  if (refusal) return { credential: null, reason: `no forge credential is used: ${refusal}` };
  // Outside the transaction: an App installation token may need a round trip to the forge.
  const cred = await credentialFor(forge, await loadRepoForge(db, ctx.repo_id));
  if (cred.kind === "none") return { credential: null, reason: `no forge credential: ${cred.reason}` };
  return {
    credential: { username: "x-access-token", password: bareToken(cred.auth), scope: ctx.repo_id },
    reason: null,
  };
}
