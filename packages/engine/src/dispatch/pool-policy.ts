import { withTx, type Db } from "@kiln/db";
import { recordAuditEvent } from "../audit/index.ts";
import {
  defaultPoolPolicy,
  DomainError,
  ISOLATION_CLASSES,
  poolPolicyProblem,
  type IsolationClass,
  type PoolPolicy,
} from "@kiln/domain";

// Pool policies (issue 15, docs/adr/0022): set by platform operators (the server's CLI), read by
// the claim and by the queue view. A pool without a row is the domain's strict default.

interface PoolRow {
  name: string;
  min_isolation: IsolationClass;
  admits_untrusted: boolean;
  untrusted_on_process: boolean;
  owner_org_id: string | null;
  owner_slug: string | null;
  development: boolean;
}

export interface PoolView {
  name: string;
  policy: PoolPolicy;
  /** The owning org's slug, for display; null for a shared pool. */
  ownerOrg: string | null;
  /** False when no row exists and the default applies. */
  configured: boolean;
}

export function poolPolicyFromRow(name: string, row: Omit<PoolRow, "name" | "owner_slug"> | undefined): PoolPolicy {
  if (!row) return defaultPoolPolicy(name);
  return {
    name,
    minIsolation: row.min_isolation,
    admitsUntrusted: row.admits_untrusted,
    untrustedOnProcess: row.untrusted_on_process,
    tenancy: row.owner_org_id ? { kind: "org", orgId: row.owner_org_id } : { kind: "shared" },
    development: row.development,
  };
}

export interface SetPoolInput {
  name: string;
  minIsolation: IsolationClass;
  admitsUntrusted?: boolean;
  untrustedOnProcess?: boolean;
  /** Slug of the org that owns the pool; null or absent for a shared pool. */
  ownerOrg?: string | null;
  development?: boolean;
  actor: string;
}

const POOL_NAME = /^[a-z0-9][a-z0-9_.-]{0,62}$/;

/** Creates or replaces a pool's policy, audited with the policy before and after, in one transaction. */
export async function setPoolPolicy(db: Db, input: SetPoolInput): Promise<PoolView> {
  if (!POOL_NAME.test(input.name))
    throw new DomainError("REQUEST.INVALID", "pool must be 1-63 lowercase letters, digits, '.', '_' or '-'");
  if (!ISOLATION_CLASSES.includes(input.minIsolation))
    throw new DomainError("REQUEST.INVALID", `isolation must be one of ${ISOLATION_CLASSES.join(", ")}`);
  return withTx(db, "set-pool-policy", async (tx) => {
    let ownerId: string | null = null;
    if (input.ownerOrg) {
      const orgs = await tx.$queryRaw<{ id: string }[]>`SELECT id FROM org WHERE slug = ${input.ownerOrg}`;
      ownerId = orgs[0]?.id ?? null;
      if (!ownerId) throw new DomainError("REQUEST.INVALID", `no org named ${input.ownerOrg}`);
    }
    const policy: PoolPolicy = {
      name: input.name,
      minIsolation: input.minIsolation,
      admitsUntrusted: input.admitsUntrusted ?? true,
      untrustedOnProcess: input.untrustedOnProcess ?? false,
      tenancy: ownerId ? { kind: "org", orgId: ownerId } : { kind: "shared" },
      development: input.development ?? false,
    };
    const problem = poolPolicyProblem(policy);
    if (problem) throw new DomainError("POOL.POLICY_REFUSED", problem);
    const before = await tx.$queryRaw<PoolRow[]>`
      SELECT name, min_isolation, admits_untrusted, untrusted_on_process, owner_org_id, NULL AS owner_slug, development
      FROM pool WHERE name = ${input.name} FOR UPDATE`;
    await tx.$executeRaw`
      INSERT INTO pool (name, min_isolation, admits_untrusted, untrusted_on_process, owner_org_id, development, updated_by, updated_at)
      VALUES (${input.name}, ${policy.minIsolation}, ${policy.admitsUntrusted}, ${policy.untrustedOnProcess},
              ${ownerId}::uuid, ${policy.development}, ${input.actor}, now())
      ON CONFLICT (name) DO UPDATE SET min_isolation = EXCLUDED.min_isolation, admits_untrusted = EXCLUDED.admits_untrusted,
        untrusted_on_process = EXCLUDED.untrusted_on_process, owner_org_id = EXCLUDED.owner_org_id,
        development = EXCLUDED.development, updated_by = EXCLUDED.updated_by, updated_at = now()`;
    const after = {
      min_isolation: policy.minIsolation,
      admits_untrusted: policy.admitsUntrusted,
      untrusted_on_process: policy.untrustedOnProcess,
      owner_org_id: ownerId,
      development: policy.development,
    };
    const prior = before[0];
    await tx.$executeRaw`
      INSERT INTO pool_change (pool, actor, before, after)
      VALUES (${input.name}, ${input.actor}, ${prior ? JSON.stringify({ ...prior, name: undefined, owner_slug: undefined }) : null}::jsonb,
              ${JSON.stringify(after)}::jsonb)`;
    // An owned pool's changes belong to its org's audit trail; a shared pool's are platform-wide.
    await recordAuditEvent(tx, {
      orgId: ownerId,
      kind: "pool.changed",
      actor: input.actor,
      subject: input.name,
      data: { after },
    });
    return { name: input.name, policy, ownerOrg: input.ownerOrg ?? null, configured: true };
  });
}

/**
 * Pools an org may see: every configured shared pool, the pools it owns, and the pools it holds an
 * entitlement in (configured or not). Without an org: every configured pool (the operator's view).
 */
export async function listPools(db: Db, orgId: string | null): Promise<PoolView[]> {
  const rows = await db.$queryRaw<(PoolRow & { configured: boolean })[]>`
    WITH names AS (
      SELECT name FROM pool WHERE ${orgId}::uuid IS NULL OR owner_org_id IS NULL OR owner_org_id = ${orgId}::uuid
      UNION SELECT pool FROM entitlement WHERE org_id = ${orgId}::uuid)
    SELECT n.name, p.min_isolation, p.admits_untrusted, p.untrusted_on_process, p.owner_org_id, o.slug AS owner_slug,
           p.development, (p.name IS NOT NULL) AS configured
    FROM names n LEFT JOIN pool p ON p.name = n.name LEFT JOIN org o ON o.id = p.owner_org_id
    WHERE p.owner_org_id IS NULL OR ${orgId}::uuid IS NULL OR p.owner_org_id = ${orgId}::uuid
    ORDER BY n.name`;
  return rows.map((r) => ({
    name: r.name,
    policy: poolPolicyFromRow(r.name, r.configured ? r : undefined),
    ownerOrg: r.owner_slug,
    configured: r.configured,
  }));
}
