import { withTx, type Db } from "@kiln/db";
import { DomainError, ISOLATION_CLASSES, orgPoolName, POOL_BASE_NAME, type IsolationClass } from "@kiln/domain";
import { recordAuditEvent } from "../audit/index.ts";

// Org pools (issue 22, ADR 0034): an org admin's pool for the org's own hosts, named `<org>/<name>`
// so it can never shadow a platform pool (those keep bare names and stay operator-only: `pool set`
// refuses a name with a slash). Owned by the org, so placement sends it the org's jobs alone.
// Untrusted runs (fork pull requests) are not admitted: the hosts are the org's own machines.

export interface OrgPoolView {
  name: string;
  org: string;
  minIsolation: IsolationClass;
  admitsUntrusted: boolean;
  /** Interruptible capacity (ADR 0035) and the on-demand pool whose background work it takes. */
  interruptible: boolean;
  serves: string | null;
  createdAt: string;
}

export async function createOrgPool(
  db: Db,
  input: { orgId: string; name: string; isolation: IsolationClass; actor: string },
): Promise<OrgPoolView> {
  if (!POOL_BASE_NAME.test(input.name))
    throw new DomainError("REQUEST.INVALID", "pool name must be 1-63 characters from a-z 0-9 . _ -");
  if (!ISOLATION_CLASSES.includes(input.isolation))
    throw new DomainError("REQUEST.INVALID", `isolation must be one of ${ISOLATION_CLASSES.join(", ")}`);
  return withTx(db, "create-org-pool", async (tx) => {
    const orgs = await tx.$queryRaw<{ slug: string }[]>`SELECT slug FROM org WHERE id = ${input.orgId}::uuid`;
    const slug = orgs[0]?.slug;
    if (!slug) throw new DomainError("ORG.NOT_FOUND", "no such org");
    const name = orgPoolName(slug, input.name);
    const rows = await tx.$queryRaw<{ created_at: Date }[]>`
      INSERT INTO pool (name, min_isolation, admits_untrusted, untrusted_on_process, owner_org_id, development, scope, updated_by)
      VALUES (${name}, ${input.isolation}, false, false, ${input.orgId}::uuid, false, 'org', ${input.actor})
      ON CONFLICT (name) DO NOTHING RETURNING created_at`;
    const row = rows[0];
    if (!row) throw new DomainError("POOL.EXISTS", `pool ${name} already exists`);
    const after = { min_isolation: input.isolation, admits_untrusted: false, owner_org_id: input.orgId, scope: "org" };
    await tx.$executeRaw`
      INSERT INTO pool_change (pool, actor, before, after) VALUES (${name}, ${input.actor}, NULL, ${JSON.stringify(after)}::jsonb)`;
    await recordAuditEvent(tx, {
      orgId: input.orgId,
      kind: "pool.created",
      actor: input.actor,
      subject: name,
      data: after,
    });
    return {
      name,
      org: slug,
      minIsolation: input.isolation,
      admitsUntrusted: false,
      interruptible: false,
      serves: null,
      createdAt: row.created_at.toISOString(),
    };
  });
}

/** The org's own pools (org-scoped in the query). */
export async function listOrgPools(db: Db, input: { orgId: string }): Promise<OrgPoolView[]> {
  const rows = await db.$queryRaw<
    {
      name: string;
      slug: string;
      min_isolation: IsolationClass;
      admits_untrusted: boolean;
      interruptible: boolean;
      serves: string | null;
      created_at: Date;
    }[]
  >`
    SELECT p.name, o.slug, p.min_isolation, p.admits_untrusted, p.interruptible, p.serves, p.created_at
    FROM pool p JOIN org o ON o.id = p.owner_org_id
    WHERE p.owner_org_id = ${input.orgId}::uuid AND p.scope = 'org' ORDER BY p.name`;
  return rows.map((r) => ({
    name: r.name,
    org: r.slug,
    minIsolation: r.min_isolation,
    admitsUntrusted: r.admits_untrusted,
    interruptible: r.interruptible,
    serves: r.serves,
    createdAt: r.created_at.toISOString(),
  }));
}
