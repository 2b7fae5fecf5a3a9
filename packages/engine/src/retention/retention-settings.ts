// Per-org windows and per-repo release patterns (issue 21). An org admin may shorten a platform
// window for the org, never lengthen it (RETENTION.WINDOW_LENGTHENED); both changes are audited.
// A changed window applies to data sealed from then on: expiry is a fact written at seal time.
import { withTx, type Db, type DbOrTx } from "@kiln/db";
import {
  checkOverrides,
  DomainError,
  releasePatternsSchema,
  RETENTION_CLASSES,
  RETENTION_KINDS,
  windowDays,
  type RetentionClass,
  type RetentionKind,
  type RetentionOverrides,
  type RetentionWindows,
} from "@kiln/domain";
import { recordAuditEvent } from "../audit/index.ts";
import { loadOrgOverrides, prismaRows } from "../shared/retention-stamp.ts";
import { requireRetentionRole, type RetentionActor } from "./retention-holds.ts";

export interface OrgRetentionView {
  platform: RetentionWindows;
  overrides: RetentionOverrides;
  effective: RetentionWindows;
}

function orgOf(a: RetentionActor): string {
  if (!a.orgId) throw new Error("an org's retention needs an org");
  return a.orgId;
}

export async function getOrgRetention(
  db: DbOrTx,
  a: RetentionActor,
  platform: RetentionWindows,
): Promise<OrgRetentionView> {
  requireRetentionRole(a, "reading the org's retention windows");
  const overrides = await loadOrgOverrides(prismaRows(db), orgOf(a));
  const effective = {} as Record<RetentionKind, Record<RetentionClass, number>>;
  for (const kind of RETENTION_KINDS) {
    effective[kind] = { release: 0, default_branch: 0, other: 0 };
    for (const cls of RETENTION_CLASSES) effective[kind][cls] = windowDays(kind, cls, platform, overrides);
  }
  return { platform, overrides, effective };
}

/** Sets (days) or clears (null) one org window. Admins only: auditors read, they do not change. */
export async function setOrgRetentionWindow(
  db: Db,
  a: RetentionActor,
  platform: RetentionWindows,
  input: { kind: RetentionKind; cls: RetentionClass; days: number | null },
): Promise<OrgRetentionView> {
  if (a.role !== "admin") throw new DomainError("AUTH.FORBIDDEN", "changing retention windows needs the admin role");
  const orgId = orgOf(a);
  if (input.days !== null) {
    if (!Number.isInteger(input.days) || input.days < 1)
      throw new DomainError("REQUEST.INVALID", "days must be a whole number of at least 1");
    checkOverrides(platform, { [input.kind]: { [input.cls]: input.days } });
  }
  await withTx(db, "retention-window-set", async (tx) => {
    if (input.days === null)
      await tx.$executeRawUnsafe(
        "DELETE FROM org_retention_window WHERE org_id = $1::uuid AND kind = $2 AND class = $3",
        orgId,
        input.kind,
        input.cls,
      );
    else
      await tx.$executeRawUnsafe(
        `INSERT INTO org_retention_window (org_id, kind, class, days, set_by) VALUES ($1::uuid, $2, $3, $4, $5)
         ON CONFLICT (org_id, kind, class) DO UPDATE SET days = EXCLUDED.days, set_by = EXCLUDED.set_by, set_at = now()`,
        orgId,
        input.kind,
        input.cls,
        input.days,
        a.actor,
      );
    await recordAuditEvent(tx, {
      orgId,
      kind: input.days === null ? "retention.window_cleared" : "retention.window_set",
      actor: a.actor,
      subject: `${input.kind}/${input.cls}`,
      data: {
        kind: input.kind,
        class: input.cls,
        days: input.days,
        platform_days: platform[input.kind][input.cls],
      },
    });
  });
  return getOrgRetention(db, a, platform);
}

/** Which refs of a repo are releases, besides tags. Admins of the repo's org. */
export async function setReleasePatterns(
  db: Db,
  a: RetentionActor,
  input: { repoId: string; patterns: string[] },
): Promise<{ repo_id: string; release_patterns: string[] }> {
  if (a.role !== "admin") throw new DomainError("AUTH.FORBIDDEN", "changing release patterns needs the admin role");
  const parsed = releasePatternsSchema.safeParse(input.patterns);
  if (!parsed.success)
    throw new DomainError("REQUEST.INVALID", `bad release patterns: ${parsed.error.issues[0]?.message ?? "invalid"}`);
  const patterns = [...new Set(parsed.data)];
  return withTx(db, "repo-release-patterns", async (tx) => {
    const rows = await tx.$queryRawUnsafe<{ id: string; org_id: string; before: string[] }[]>(
      `UPDATE repo r SET release_patterns = $3 FROM repo old
       WHERE r.id = $1::uuid AND old.id = r.id AND ($2::uuid IS NULL OR r.org_id = $2::uuid)
       RETURNING r.id::text, r.org_id::text, old.release_patterns AS before`,
      input.repoId,
      a.orgId,
      patterns,
    );
    const r = rows[0];
    if (!r) throw new DomainError("REPO.NOT_FOUND", "no such repository");
    await recordAuditEvent(tx, {
      orgId: r.org_id,
      kind: "repo.release_patterns_set",
      actor: a.actor,
      subject: `repo:${r.id}`,
      data: { before: r.before, after: patterns },
    });
    return { repo_id: r.id, release_patterns: patterns };
  });
}
