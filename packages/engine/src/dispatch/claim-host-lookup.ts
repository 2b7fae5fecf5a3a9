import { DEFAULT_RUNNER_SIZE, DomainError, type IsolationClass, type RunnerSize } from "@kiln/domain";
import type { SqlPool } from "../shared/sql-pool.ts";
import type { HostRunner } from "./claim-types.ts";
import { poolPolicyFromRow } from "./pool-policy.ts";

// What a claim reads about its host before choosing candidates: advisory, cached per process, and
// re-checked by the claim transaction on the rows it locks.

// A session's pool never changes: remembered per process (per credential, when one is given, so
// a cached answer never stands in for a credential check), one query less per claim (bounded).
// Revocation is not cached: the claim transaction re-checks it on every claim.
interface SessionFacts {
  pool: string;
  org: string | null;
  isolation: string | null;
  runner: HostRunner;
}

const sessionPools = new Map<string, SessionFacts>();

export async function poolOfSession(sql: SqlPool, sessionId: string, credential: string | null): Promise<SessionFacts> {
  const cacheKey = `${sessionId}:${credential ?? ""}`;
  const known = sessionPools.get(cacheKey);
  if (known !== undefined) return known;
  const rows = await sql.query<{
    token: "live" | "revoked" | null;
    pool: string | null;
    org: string | null;
    isolation: string | null;
    runner_labels: string[] | null;
    sizes: RunnerSize[] | null;
  }>({
    name: "session-pool-4",
    text: `SELECT CASE WHEN $2::text IS NULL THEN 'live'
                       ELSE (SELECT CASE WHEN revoked_at IS NULL THEN 'live' ELSE 'revoked' END FROM agent_token WHERE token_hash = $2) END AS token,
                  s.pool, t.org_id AS org, s.labels->>'isolation' AS isolation, s.runner_labels, s.sizes
           FROM (SELECT 1) AS one
             LEFT JOIN agent_session s ON s.id = $1::uuid
               AND ($2::text IS NULL OR s.agent_token_id = (SELECT id FROM agent_token WHERE token_hash = $2))
             LEFT JOIN agent_token t ON t.id = s.agent_token_id`,
    values: [sessionId, credential],
  });
  const row = rows.rows[0];
  if (!row?.token) throw new DomainError("AUTH.UNAUTHENTICATED", "invalid host credential");
  if (row.token === "revoked") throw new DomainError("AUTH.CREDENTIAL_REVOKED", "this host credential was revoked");
  if (row.pool === null) throw new DomainError("SESSION.NOT_FOUND", "unknown agent session; register again");
  if (sessionPools.size >= 10_000) sessionPools.clear();
  const found = {
    pool: row.pool,
    org: row.org,
    isolation: row.isolation,
    runner: { labels: row.runner_labels ?? [], sizes: row.sizes ?? [DEFAULT_RUNNER_SIZE] },
  };
  sessionPools.set(cacheKey, found);
  return found;
}

/** What the claim transaction returns: everything the ticket needs, read under its locks. */

// A host's standing for the pre-candidate check only, per session, for a second.
const standingCache = new Map<string, { at: number; state: string | null; reason: string | null }>();

export async function cachedRunnerStanding(
  sql: SqlPool,
  sessionId: string,
): Promise<{ state: string | null; reason: string | null }> {
  const hit = standingCache.get(sessionId);
  if (hit && performance.now() - hit.at < 1_000) return hit;
  const rows = await sql.query<{ state: string | null; reason: string | null }>({
    name: "claim-runner-standing",
    text: `SELECT h.state, h.quarantine_reason AS reason FROM agent_session s JOIN runner h ON h.id = s.runner_id WHERE s.id = $1::uuid`,
    values: [sessionId],
  });
  const got = { at: performance.now(), state: rows.rows[0]?.state ?? null, reason: rows.rows[0]?.reason ?? null };
  if (standingCache.size >= 10_000) standingCache.clear();
  standingCache.set(sessionId, got);
  return got;
}

// The pool policy for candidate filtering only, per process, for a second: a claim loop should not
// read it on every call, and the transaction re-reads it anyway.
const policyCache = new Map<string, { at: number; policy: ReturnType<typeof poolPolicyFromRow> }>();

export async function cachedPoolPolicy(sql: SqlPool, pool: string): Promise<ReturnType<typeof poolPolicyFromRow>> {
  const hit = policyCache.get(pool);
  if (hit && performance.now() - hit.at < 1_000) return hit.policy;
  const rows = await sql.query<{
    min_isolation: IsolationClass;
    admits_untrusted: boolean;
    untrusted_on_process: boolean;
    owner_org_id: string | null;
    development: boolean;
  }>({
    name: "claim-pool-policy",
    text: `SELECT min_isolation, admits_untrusted, untrusted_on_process, owner_org_id, development FROM pool WHERE name = $1`,
    values: [pool],
  });
  const policy = poolPolicyFromRow(pool, rows.rows[0]);
  if (policyCache.size >= 1_000) policyCache.clear();
  policyCache.set(pool, { at: performance.now(), policy });
  return policy;
}
