// Retention holds (issue 21): an org's admin or auditor keeps one artifact past its expiry, with a
// reason. Tenant scoping is in every query: another org's artifact or hold is a 404, exactly like
// one that does not exist. The operator's CLI passes orgId null (the whole platform). A hold takes
// the generation's row lock, the lock eviction takes, so a hold and an eviction never interleave.
import { withTx, type Db, type DbOrTx } from "@kiln/db";
import { DomainError, type Role } from "@kiln/domain";
import { recordAuditEvent } from "../audit/index.ts";

export interface RetentionActor {
  /** The caller's org; null for the platform operator (the CLI). */
  orgId: string | null;
  role: Role;
  /** `token:<name>`, `web:<login>`, `cli:<user>`. */
  actor: string;
}

export interface RetentionHoldView {
  id: string;
  artifact_id: string;
  org_id: string;
  reason: string;
  created_by: string;
  created_at: string;
  removed_by: string | null;
  removed_at: string | null;
}

const HOLD_ROLES: readonly Role[] = ["admin", "auditor"];

export function requireRetentionRole(a: RetentionActor, what: string): void {
  if (!HOLD_ROLES.includes(a.role)) throw new DomainError("AUTH.FORBIDDEN", `${what} needs the admin or auditor role`);
}

interface GenRow {
  id: string;
  org_id: string;
  state: string;
  expired_at: Date | null;
  bound: boolean;
}

async function lockArtifact(tx: DbOrTx, a: RetentionActor, artifactId: string): Promise<GenRow> {
  const rows = await tx.$queryRawUnsafe<GenRow[]>(
    `SELECT g.id::text, j.org_id::text, g.state, g.expired_at,
            EXISTS (SELECT 1 FROM artifact_binding b WHERE b.generation_id = g.id) AS bound
     FROM artifact_generation g JOIN job_run j ON j.id = g.job_id
     WHERE g.id = $1::uuid AND ($2::uuid IS NULL OR j.org_id = $2::uuid) FOR UPDATE OF g`,
    artifactId,
    a.orgId,
  );
  const g = rows[0];
  if (!g || !g.bound || g.state !== "sealed") throw new DomainError("ARTIFACT.NOT_FOUND", "artifact not found");
  return g;
}

export async function addRetentionHold(
  db: Db,
  a: RetentionActor,
  input: { artifactId: string; reason: string },
): Promise<RetentionHoldView> {
  requireRetentionRole(a, "placing a retention hold");
  const reason = input.reason.trim();
  if (reason.length < 1 || reason.length > 2000)
    throw new DomainError("REQUEST.INVALID", "a hold needs a reason of 1 to 2000 characters");
  return withTx(db, "retention-hold-add", async (tx) => {
    const g = await lockArtifact(tx, a, input.artifactId);
    if (g.expired_at)
      throw new DomainError("ARTIFACT.EXPIRED", "this artifact has already expired: its bytes are being deleted", {
        expired_at: g.expired_at.toISOString(),
      });
    const existing = await tx.$queryRawUnsafe<{ id: string }[]>(
      "SELECT id::text FROM retention_hold WHERE generation_id = $1::uuid AND removed_at IS NULL",
      g.id,
    );
    if (existing[0])
      throw new DomainError("RETENTION.HOLD_EXISTS", "this artifact already has a retention hold", {
        hold_id: existing[0].id,
      });
    const rows = await tx.$queryRawUnsafe<HoldRow[]>(
      `INSERT INTO retention_hold (org_id, generation_id, reason, created_by) VALUES ($1::uuid, $2::uuid, $3, $4)
       RETURNING ${HOLD_COLUMNS}`,
      g.org_id,
      g.id,
      reason,
      a.actor,
    );
    const hold = view(rows[0]);
    await recordAuditEvent(tx, {
      orgId: g.org_id,
      kind: "retention.hold_added",
      actor: a.actor,
      subject: `artifact:${g.id}`,
      data: { hold_id: hold.id, artifact_id: g.id, reason },
    });
    return hold;
  });
}

export async function removeRetentionHold(
  db: Db,
  a: RetentionActor,
  input: { artifactId: string },
): Promise<RetentionHoldView> {
  requireRetentionRole(a, "removing a retention hold");
  return withTx(db, "retention-hold-remove", async (tx) => {
    const rows = await tx.$queryRawUnsafe<HoldRow[]>(
      `UPDATE retention_hold SET removed_by = $3, removed_at = now()
       WHERE generation_id = $1::uuid AND removed_at IS NULL AND ($2::uuid IS NULL OR org_id = $2::uuid)
       RETURNING ${HOLD_COLUMNS}`,
      input.artifactId,
      a.orgId,
      a.actor,
    );
    if (!rows[0]) throw new DomainError("RETENTION.HOLD_NOT_FOUND", "this artifact has no retention hold");
    const hold = view(rows[0]);
    await recordAuditEvent(tx, {
      orgId: hold.org_id,
      kind: "retention.hold_removed",
      actor: a.actor,
      subject: `artifact:${hold.artifact_id}`,
      data: { hold_id: hold.id, artifact_id: hold.artifact_id, reason: hold.reason },
    });
    return hold;
  });
}

/** Active holds first, newest first; removed ones too when asked (who lifted what, when). */
export async function listRetentionHolds(
  db: DbOrTx,
  a: RetentionActor,
  opts: { includeRemoved?: boolean; limit?: number } = {},
): Promise<RetentionHoldView[]> {
  requireRetentionRole(a, "listing retention holds");
  const rows = await db.$queryRawUnsafe<HoldRow[]>(
    `SELECT ${HOLD_COLUMNS} FROM retention_hold
     WHERE ($1::uuid IS NULL OR org_id = $1::uuid) AND ($2 OR removed_at IS NULL)
     ORDER BY removed_at IS NOT NULL, created_at DESC, id LIMIT $3`,
    a.orgId,
    opts.includeRemoved ?? false,
    Math.min(opts.limit ?? 200, 1000),
  );
  return rows.map(view);
}

const HOLD_COLUMNS =
  "id::text, generation_id::text, org_id::text, reason, created_by, created_at, removed_by, removed_at";

interface HoldRow {
  id: string;
  generation_id: string;
  org_id: string;
  reason: string;
  created_by: string;
  created_at: Date;
  removed_by: string | null;
  removed_at: Date | null;
}

function view(r: HoldRow | undefined): RetentionHoldView {
  if (!r) throw new Error("retention_hold write returned no row");
  return {
    id: r.id,
    artifact_id: r.generation_id,
    org_id: r.org_id,
    reason: r.reason,
    created_by: r.created_by,
    created_at: r.created_at.toISOString(),
    removed_by: r.removed_by,
    removed_at: r.removed_at?.toISOString() ?? null,
  };
}
