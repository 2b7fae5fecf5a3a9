import type { DbOrTx } from "@kiln/db";
import { DomainError, type FailMode } from "@kiln/domain";
import { UUID } from "./env-actor.ts";

// Reads of environments, always filtered by the caller's org in the query itself: another org's
// environment id answers ENV.NOT_FOUND, the same as an id nobody has.

export interface EnvironmentView {
  id: string;
  repoId: string;
  repo: string;
  name: string;
  after: string | null;
  position: number;
  production: boolean;
  failMode: FailMode;
  policyVersion: number;
  pointer: {
    artifactId: string;
    digest: string;
    attestationId: string | null;
    promotionId: string;
    movedAt: string;
    seq: string;
  } | null;
  createdAt: string;
}

export interface EnvRow {
  id: string;
  org_id: string;
  repo_id: string;
  repo: string;
  name: string;
  after_id: string | null;
  after_name: string | null;
  position: number;
  production: boolean;
  fail_mode: FailMode;
  policy_version: number;
  current_generation_id: string | null;
  current_digest: string | null;
  current_attestation_id: string | null;
  current_promotion_id: string | null;
  pointer_moved_at: Date | null;
  pointer_seq: bigint;
  created_at: Date;
}

const COLUMNS = `e.id, e.org_id, e.repo_id, r.full_name AS repo, e.name, e.after_id, a.name AS after_name, e.position,
  e.production, e.fail_mode, e.policy_version, e.current_generation_id, e.current_digest, e.current_attestation_id,
  e.current_promotion_id, e.pointer_moved_at, e.pointer_seq, e.created_at`;
const FROM = `FROM environment e JOIN repo r ON r.id = e.repo_id LEFT JOIN environment a ON a.id = e.after_id`;

export function envView(e: EnvRow): EnvironmentView {
  return {
    id: e.id,
    repoId: e.repo_id,
    repo: e.repo,
    name: e.name,
    after: e.after_name,
    position: e.position,
    production: e.production,
    failMode: e.fail_mode,
    policyVersion: e.policy_version,
    pointer:
      e.current_generation_id && e.current_digest && e.current_promotion_id && e.pointer_moved_at
        ? {
            artifactId: e.current_generation_id,
            digest: e.current_digest,
            attestationId: e.current_attestation_id,
            promotionId: e.current_promotion_id,
            movedAt: e.pointer_moved_at.toISOString(),
            seq: e.pointer_seq.toString(),
          }
        : null,
    createdAt: e.created_at.toISOString(),
  };
}

/** One environment of the org; `lock` takes its row lock (FOR UPDATE OF e) inside a transaction. */
export async function loadEnvironment(
  db: DbOrTx,
  orgId: string,
  environmentId: string,
  opts: { lock?: boolean } = {},
): Promise<EnvRow> {
  if (!UUID.test(environmentId)) throw new DomainError("ENV.NOT_FOUND", "no such environment");
  const rows = await db.$queryRawUnsafe<EnvRow[]>(
    `SELECT ${COLUMNS} ${FROM} WHERE e.id = $1::uuid AND e.org_id = $2::uuid${opts.lock ? " FOR UPDATE OF e" : ""}`,
    environmentId,
    orgId,
  );
  const e = rows[0];
  if (!e) throw new DomainError("ENV.NOT_FOUND", "no such environment");
  return e;
}

/** The repo's environments in promotion order. */
export async function listEnvironments(db: DbOrTx, orgId: string, repoId: string): Promise<EnvironmentView[]> {
  if (!UUID.test(repoId)) throw new DomainError("REPO.NOT_FOUND", "no such repo");
  const repo = await db.$queryRaw<{ id: string }[]>`
    SELECT id FROM repo WHERE id = ${repoId}::uuid AND org_id = ${orgId}::uuid`;
  if (!repo[0]) throw new DomainError("REPO.NOT_FOUND", "no such repo");
  const rows = await db.$queryRawUnsafe<EnvRow[]>(
    `SELECT ${COLUMNS} ${FROM} WHERE e.repo_id = $1::uuid AND e.org_id = $2::uuid ORDER BY e.position, e.created_at, e.id`,
    repoId,
    orgId,
  );
  return rows.map(envView);
}

/** The org's environments of every repo (the dashboard's overview), in promotion order per repo. */
export async function listOrgEnvironments(db: DbOrTx, orgId: string): Promise<EnvironmentView[]> {
  const rows = await db.$queryRawUnsafe<EnvRow[]>(
    `SELECT ${COLUMNS} ${FROM} WHERE e.org_id = $1::uuid ORDER BY r.full_name, e.position, e.created_at, e.id LIMIT 500`,
    orgId,
  );
  return rows.map(envView);
}

export async function getEnvironment(db: DbOrTx, orgId: string, environmentId: string): Promise<EnvironmentView> {
  return envView(await loadEnvironment(db, orgId, environmentId));
}

/** `<org>/<repo>` and a name (the CLI): the environment's id in that org. */
export async function findEnvironmentByName(
  db: DbOrTx,
  input: { orgId: string; repoId: string; name: string },
): Promise<EnvRow> {
  const rows = await db.$queryRawUnsafe<EnvRow[]>(
    `SELECT ${COLUMNS} ${FROM} WHERE e.repo_id = $1::uuid AND e.org_id = $2::uuid AND e.name = $3`,
    input.repoId,
    input.orgId,
    input.name,
  );
  const e = rows[0];
  if (!e) throw new DomainError("ENV.NOT_FOUND", `no environment ${input.name} in this repo`);
  return e;
}
