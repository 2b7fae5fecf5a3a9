import { randomUUID } from "node:crypto";
import type { Db } from "@kiln/db";
import { checkRunOf, isOutcome } from "@kiln/domain";
import { credentialFor, forgetInstallationToken, loadRepoForge, type ForgeCredential } from "./credentials.ts";
import { computeDesiredStatuses, storeDesiredStatuses } from "./desired-statuses.ts";
import type { ForgeConfig } from "./forge-config.ts";
import { ForgeApiError, forgeRequest } from "./github-api.ts";

// Delivers a run's statuses (the forge-status job; ADR 0028). Never inside a state change's
// transaction: the outbox row says "look at run X", this reads the current state, records what it
// wants in forge_status, and sends what the forge does not have yet. Per row, one delivery at a
// time (a lease longer than any request), and delivered_seq only grows: so a slow older request
// cannot land after a newer one, and a late `pending` never overwrites a final state.

export type DeliveryReport =
  | { kind: "done"; delivered: number }
  | { kind: "no_credential"; reason: string }
  /** Rate limited: call again no sooner than this. */
  | { kind: "wait"; retryAfterMs: number; delivered: number };

interface Claimed {
  id: string;
  context: string;
  commit_sha: string;
  desired_seq: bigint;
  state: string;
  description: string;
  target_url: string | null;
  summary: string | null;
  check_run_id: bigint | null;
  run_status: string;
  run_outcome: string | null;
  repo_full_name: string;
  run_id: string;
}

const MAX_ROUNDS = 10;

export async function deliverRunStatuses(db: Db, cfg: ForgeConfig, runId: string): Promise<DeliveryReport> {
  const desired = await computeDesiredStatuses(db, cfg, runId);
  if (!desired) return { kind: "done", delivered: 0 };
  await storeDesiredStatuses(db, desired.run, desired.statuses);
  let cred: ForgeCredential;
  try {
    cred = await credentialFor(cfg, await loadRepoForge(db, desired.run.repo_id));
  } catch (err) {
    if (err instanceof ForgeApiError) return onCredentialFailure(db, runId, err);
    throw err;
  }
  if (cred.kind === "none") {
    // Retried by the reconciler's sweep every ten minutes (a credential may be added meanwhile).
    await db.$executeRaw`UPDATE forge_status SET last_error = ${`not delivered: ${cred.reason}`}, updated_at = now(),
      next_attempt_at = now() + interval '10 minutes'
      WHERE run_id = ${runId}::uuid AND delivered_seq < desired_seq`;
    return { kind: "no_credential", reason: cred.reason };
  }
  const paused = await db.$queryRaw<{ ms: number }[]>`
    SELECT (EXTRACT(EPOCH FROM (until - now())) * 1000)::int AS ms FROM forge_rate_limit WHERE credential_key = ${cred.key} AND until > now()`;
  if (paused[0]) {
    await db.$executeRaw`UPDATE forge_status SET next_attempt_at = now() + make_interval(secs => ${paused[0].ms / 1000}::float8)
      WHERE run_id = ${runId}::uuid AND delivered_seq < desired_seq`;
    return { kind: "wait", retryAfterMs: Math.max(1_000, paused[0].ms), delivered: 0 };
  }

  let delivered = 0;
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const lease = randomUUID();
    const rows = await claim(db, cfg, runId, lease);
    if (rows.length === 0) break;
    // The run's own context first, so the forge's summary line is right soonest.
    rows.sort((a, b) => a.context.length - b.context.length);
    for (const [i, row] of rows.entries()) {
      try {
        const checkRunId = cred.kind === "app" ? await sendCheckRun(cfg, cred, row) : null;
        await forgeRequest(cfg, {
          method: "POST",
          path: `/repos/${row.repo_full_name}/statuses/${row.commit_sha}`,
          auth: cred.auth,
          body: {
            state: row.state,
            target_url: row.target_url ?? undefined,
            description: row.description,
            context: row.context,
          },
        });
        await db.$executeRaw`
          UPDATE forge_status SET delivered_seq = GREATEST(delivered_seq, ${row.desired_seq}::bigint), delivered_state = ${row.state},
            delivered_at = now(), attempts = attempts + 1, last_http_status = 201, last_error = NULL, next_attempt_at = NULL,
            check_run_id = COALESCE(${checkRunId}::bigint, check_run_id), lease_token = NULL, lease_until = NULL, updated_at = now()
          WHERE id = ${row.id}::uuid AND lease_token = ${lease}::uuid`;
        delivered++;
      } catch (err) {
        if (!(err instanceof ForgeApiError)) throw err;
        const rest = rows.slice(i).map((r) => r.id);
        if (err.kind === "unauthorised" && cred.kind === "app") forgetInstallationToken(cred.installationId);
        if (err.kind === "rate_limited") {
          const ms = err.retryAfterMs ?? 60_000;
          await db.$executeRaw`
            INSERT INTO forge_rate_limit (credential_key, until, reason) VALUES (${cred.key}, now() + make_interval(secs => ${ms / 1000}::float8), ${err.message})
            ON CONFLICT (credential_key) DO UPDATE SET until = GREATEST(forge_rate_limit.until, EXCLUDED.until), reason = EXCLUDED.reason`;
          await release(db, rest, lease, err, ms);
          return { kind: "wait", retryAfterMs: ms, delivered };
        }
        // A refusal (422, 404, 403 without a rate limit) will not heal by retrying at once: the
        // row waits ten minutes (the reconciler's sweep tries it again); an outage is retried by
        // the job's own backoff.
        await release(db, rest, lease, err, err.kind === "unavailable" ? null : 600_000);
        if (err.kind === "unavailable") throw err;
        return { kind: "done", delivered };
      }
    }
  }
  return { kind: "done", delivered };
}

async function claim(db: Db, cfg: ForgeConfig, runId: string, lease: string): Promise<Claimed[]> {
  const leaseS = (cfg.requestTimeoutMs * 3) / 1000 + 5;
  return db.$queryRaw<Claimed[]>`
    WITH c AS (
      UPDATE forge_status SET lease_token = ${lease}::uuid, lease_until = now() + make_interval(secs => ${leaseS}::float8)
      WHERE run_id = ${runId}::uuid AND delivered_seq < desired_seq
        AND (next_attempt_at IS NULL OR next_attempt_at <= now())
        AND (lease_until IS NULL OR lease_until < now())
      RETURNING id, context, commit_sha, desired_seq, state, description, target_url, summary, check_run_id, repo_id, run_id, job_id)
    SELECT c.id, c.context, c.commit_sha, c.desired_seq, c.state, c.description, c.target_url, c.summary, c.check_run_id,
           c.run_id, repo.full_name AS repo_full_name,
           COALESCE(j.status, r.status) AS run_status, CASE WHEN c.job_id IS NULL THEN r.outcome ELSE j.outcome END AS run_outcome
    FROM c JOIN repo ON repo.id = c.repo_id JOIN workflow_run r ON r.id = c.run_id LEFT JOIN job_run j ON j.id = c.job_id`;
}

async function release(db: Db, ids: string[], lease: string, err: ForgeApiError, waitMs: number | null): Promise<void> {
  await db.$executeRaw`
    UPDATE forge_status SET lease_token = NULL, lease_until = NULL, attempts = attempts + 1, last_http_status = ${err.status},
      last_error = ${err.message.slice(0, 500)},
      next_attempt_at = CASE WHEN ${waitMs}::float8 IS NULL THEN NULL ELSE now() + make_interval(secs => ${(waitMs ?? 0) / 1000}::float8) END,
      updated_at = now()
    WHERE id = ANY(${ids}::uuid[]) AND lease_token = ${lease}::uuid`;
}

async function onCredentialFailure(db: Db, runId: string, err: ForgeApiError): Promise<DeliveryReport> {
  await db.$executeRaw`UPDATE forge_status SET last_error = ${`installation token: ${err.message}`.slice(0, 500)},
    last_http_status = ${err.status}, updated_at = now() WHERE run_id = ${runId}::uuid AND delivered_seq < desired_seq`;
  if (err.kind === "rate_limited") return { kind: "wait", retryAfterMs: err.retryAfterMs ?? 60_000, delivered: 0 };
  throw err;
}

/** Creates the context's check run the first time, updates it afterwards (Checks API, App only). */
async function sendCheckRun(cfg: ForgeConfig, cred: ForgeCredential & { kind: "app" }, row: Claimed): Promise<bigint> {
  const c = checkRunOf({
    status: row.run_status,
    outcome: row.run_outcome !== null && isOutcome(row.run_outcome) ? row.run_outcome : null,
    cause: null,
    causeMessage: null,
    platformRetries: 0,
  });
  const body = {
    name: row.context,
    details_url: row.target_url ?? undefined,
    external_id: row.run_id,
    status: c.status,
    ...(c.conclusion ? { conclusion: c.conclusion } : {}),
    output: { title: row.description, summary: row.summary ?? row.description },
  };
  if (row.check_run_id) {
    await forgeRequest(cfg, {
      method: "PATCH",
      path: `/repos/${row.repo_full_name}/check-runs/${row.check_run_id}`,
      auth: cred.auth,
      body,
    });
    return row.check_run_id;
  }
  const r = await forgeRequest<{ id: number }>(cfg, {
    method: "POST",
    path: `/repos/${row.repo_full_name}/check-runs`,
    auth: cred.auth,
    body: { ...body, head_sha: row.commit_sha },
  });
  return BigInt(r.body.id);
}

/** Runs with statuses still to deliver and due now: the reconciler's backstop re-sends their jobs. */
export async function runsWithUndeliveredStatuses(db: Db, limit = 200): Promise<string[]> {
  const rows = await db.$queryRaw<{ run_id: string }[]>`
    SELECT DISTINCT run_id FROM forge_status
    WHERE delivered_seq < desired_seq AND (next_attempt_at IS NULL OR next_attempt_at <= now())
      AND (lease_until IS NULL OR lease_until < now()) AND updated_at < now() - interval '2 seconds'
    LIMIT ${limit}`;
  return rows.map((r) => r.run_id);
}
