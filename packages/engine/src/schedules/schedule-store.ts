import { withTx, type Db, type Tx } from "@kiln/db";
import {
  canTrigger,
  DomainError,
  replaceWorkflowSchedules,
  SCHEDULE_LIMITS,
  specProblem,
  upcomingSlots,
  type Role,
  type WorkflowSchedule,
} from "@kiln/domain";
import { recordAuditEvent } from "../audit/index.ts";

export interface ScheduleView {
  id: string;
  repo_id: string;
  repo: string;
  cron: string;
  timezone: string;
  origin: "workflow" | "api";
  created_by: string;
  created_at: string;
  last_slot_at: string | null;
  last_run_id: string | null;
  /** The next slots, on the same forward walk the scheduler takes (ADR 0031). */
  next_runs: string[];
}

export interface ScheduleCaller {
  orgId: string;
  role: Role;
  /** As the audit trail names callers: `web:<login>`, `token:<id>`, `cli:<user>`. */
  actor: string;
}

const NEXT_SHOWN = 3;

/** An org's schedules, optionally of one repo; tenant scoping is in the query. */
export async function listSchedules(db: Db, input: { orgId: string; repoId?: string | null }): Promise<ScheduleView[]> {
  const rows = await db.$queryRaw<
    {
      id: string;
      repo_id: string;
      full_name: string;
      cron: string;
      timezone: string;
      origin: "workflow" | "api";
      created_by: string;
      created_at: Date;
      last_slot_at: Date | null;
      last_run_id: string | null;
      now: Date;
    }[]
  >`
    SELECT s.id, s.repo_id, r.full_name, s.cron, s.timezone, s.origin, s.created_by, s.created_at, s.last_slot_at,
           (SELECT run_id FROM schedule_slot x WHERE x.schedule_id = s.id ORDER BY slot_at DESC LIMIT 1) AS last_run_id,
           now() AS now
    FROM schedule s JOIN repo r ON r.id = s.repo_id AND r.org_id = s.org_id
    WHERE s.org_id = ${input.orgId}::uuid AND (${input.repoId ?? null}::uuid IS NULL OR s.repo_id = ${input.repoId ?? null}::uuid)
    ORDER BY r.full_name, s.origin DESC, s.created_at, s.id
    LIMIT 1000`;
  return rows.map((s) => ({
    id: s.id,
    repo_id: s.repo_id,
    repo: s.full_name,
    cron: s.cron,
    timezone: s.timezone,
    origin: s.origin,
    created_by: s.created_by,
    created_at: s.created_at.toISOString(),
    last_slot_at: s.last_slot_at?.toISOString() ?? null,
    last_run_id: s.last_run_id,
    next_runs: upcomingSlots(s, s.last_slot_at ?? s.created_at, s.now, NEXT_SHOWN).map((d) => d.toISOString()),
  }));
}

/** A member's schedule on one of the org's repos (API, CLI, dashboard). */
export async function addSchedule(
  db: Db,
  input: { caller: ScheduleCaller; repoId: string; cron: string; timezone: string },
): Promise<ScheduleView> {
  if (!canTrigger(input.caller.role))
    throw new DomainError("AUTH.FORBIDDEN", `role ${input.caller.role} cannot add schedules`);
  const spec = { cron: input.cron.trim().replace(/\s+/g, " "), timezone: input.timezone };
  const problem = specProblem(spec);
  if (problem) throw new DomainError("SCHEDULE.INVALID", problem.message, { field: problem.field });
  const id = await withTx(db, "add-schedule", async (tx) => {
    // The repo row lock serialises adds per repo, so the count below is exact.
    const repos = await tx.$queryRaw<{ id: string; n: number }[]>`
      SELECT r.id, (SELECT count(*)::int FROM schedule s WHERE s.repo_id = r.id) AS n
      FROM repo r WHERE r.id = ${input.repoId}::uuid AND r.org_id = ${input.caller.orgId}::uuid FOR UPDATE OF r`;
    const repo = repos[0];
    if (!repo) throw new DomainError("REPO.NOT_FOUND", "repository not found");
    if (repo.n >= SCHEDULE_LIMITS.maxPerRepo)
      throw new DomainError(
        "SCHEDULE.LIMIT_REACHED",
        `a repository has at most ${SCHEDULE_LIMITS.maxPerRepo} schedules`,
      );
    const ins = await tx.$queryRaw<{ id: string }[]>`
      INSERT INTO schedule (org_id, repo_id, cron, timezone, origin, created_by)
      VALUES (${input.caller.orgId}::uuid, ${repo.id}::uuid, ${spec.cron}, ${spec.timezone}, 'api', ${input.caller.actor})
      ON CONFLICT (repo_id, origin, cron, timezone) DO NOTHING RETURNING id`;
    const created = ins[0];
    if (!created)
      throw new DomainError("SCHEDULE.EXISTS", `this repository already has ${spec.cron} (${spec.timezone})`);
    await recordAuditEvent(tx, {
      orgId: input.caller.orgId,
      kind: "schedule.added",
      actor: input.caller.actor,
      subject: created.id,
      data: { repo_id: repo.id, cron: spec.cron, timezone: spec.timezone },
    });
    return created.id;
  });
  const view = (await listSchedules(db, { orgId: input.caller.orgId, repoId: input.repoId })).find((s) => s.id === id);
  if (!view) throw new DomainError("SCHEDULE.NOT_FOUND", "schedule vanished");
  return view;
}

/** Removes a schedule added through the API; the workflow file's own are changed in the file. */
export async function removeSchedule(db: Db, input: { caller: ScheduleCaller; scheduleId: string }): Promise<void> {
  if (!canTrigger(input.caller.role))
    throw new DomainError("AUTH.FORBIDDEN", `role ${input.caller.role} cannot remove schedules`);
  await withTx(db, "remove-schedule", async (tx) => {
    const rows = await tx.$queryRaw<{ origin: string; repo_id: string; cron: string; timezone: string }[]>`
      SELECT origin, repo_id, cron, timezone FROM schedule
      WHERE id = ${input.scheduleId}::uuid AND org_id = ${input.caller.orgId}::uuid FOR UPDATE`;
    const row = rows[0];
    if (!row) throw new DomainError("SCHEDULE.NOT_FOUND", "schedule not found");
    if (row.origin !== "api")
      throw new DomainError(
        "SCHEDULE.FROM_WORKFLOW",
        "this schedule comes from the workflow file on the default branch: remove it there",
      );
    await tx.$executeRaw`DELETE FROM schedule WHERE id = ${input.scheduleId}::uuid AND origin = 'api'`;
    await recordAuditEvent(tx, {
      orgId: input.caller.orgId,
      kind: "schedule.removed",
      actor: input.caller.actor,
      subject: input.scheduleId,
      data: { repo_id: row.repo_id, cron: row.cron, timezone: row.timezone },
    });
  });
}

/** A repository by its full name, for the operator CLI (`kiln schedule ... <org>/<repo>`). */
export async function repoByFullName(db: Db, fullName: string): Promise<{ id: string; orgId: string }> {
  const rows = await db.$queryRaw<{ id: string; org_id: string }[]>`
    SELECT id, org_id FROM repo WHERE full_name = ${fullName}`;
  const r = rows[0];
  if (!r) throw new DomainError("REPO.NOT_FOUND", `no repository ${fullName}`);
  return { id: r.id, orgId: r.org_id };
}

/**
 * Called inside the freeze transaction of a trusted push or scheduled run on the repo's default
 * branch: the file's `schedules:` replace the ones an earlier commit recorded (none declared
 * removes them). A run admitted before the one that recorded the current set changes nothing, so
 * an old commit frozen late never undoes a newer one. Entries the new file keeps keep their rows,
 * and with them their last slot: no slot runs twice because a file was pushed again.
 */
export async function recordWorkflowSchedules(
  tx: Tx,
  run: { orgId: string; repoId: string; admittedAt: Date; actor: string },
  declared: readonly WorkflowSchedule[],
): Promise<boolean> {
  const claimed = await tx.$queryRaw<{ id: string }[]>`
    UPDATE repo SET schedules_recorded_at = ${run.admittedAt}
    WHERE id = ${run.repoId}::uuid AND (schedules_recorded_at IS NULL OR schedules_recorded_at < ${run.admittedAt})
    RETURNING id`;
  if (!claimed[0]) return false;
  const recorded = await tx.$queryRaw<{ id: string; cron: string; timezone: string }[]>`
    SELECT id, cron, timezone FROM schedule WHERE repo_id = ${run.repoId}::uuid AND origin = 'workflow'`;
  const plan = replaceWorkflowSchedules(recorded, declared);
  if (plan.remove.length > 0)
    await tx.$executeRaw`DELETE FROM schedule WHERE id = ANY(${plan.remove}::uuid[]) AND origin = 'workflow'`;
  for (const s of plan.add)
    await tx.$executeRaw`
      INSERT INTO schedule (org_id, repo_id, cron, timezone, origin, created_by)
      VALUES (${run.orgId}::uuid, ${run.repoId}::uuid, ${s.cron}, ${s.timezone}, 'workflow', ${run.actor})
      ON CONFLICT (repo_id, origin, cron, timezone) DO NOTHING`;
  return true;
}
