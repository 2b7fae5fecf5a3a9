import { withTx, type Db } from "@kiln/db";
import { computeTrustClass, scheduledActor } from "@kiln/domain";
import { enqueueOutbox, recordTransition } from "../shared/journal.ts";

export interface SlotAdmission {
  scheduleId: string;
  slot: Date;
  /** The schedule's last slot as the tick read it: the compare-and-set that lets one worker win. */
  readLastSlotAt: Date | null;
  commitSha: string;
}

export type SlotAdmissionResult = { kind: "admitted"; runId: string } | { kind: "taken" };

/**
 * Admits the run of one schedule slot, once. One transaction: the schedule's last slot moves
 * forward only from the value this tick read (a second worker that read the same value, or a
 * restarted one that already admitted it, changes nothing), the slot row is inserted under its
 * primary key (schedule, slot), and only then the run with its first event and its freeze request,
 * as a manual trigger or webhook does. The trust class is computed here, by the same domain rule
 * every admission uses (ADR 0031): trusted, on the scheduled tier (freeze gives jobs without a tier
 * the trigger's). The run's actor names the schedule.
 */
export async function admitScheduledRun(db: Db, a: SlotAdmission): Promise<SlotAdmissionResult> {
  return withTx(db, "admit-scheduled", async (tx) => {
    const moved = await tx.$queryRaw<
      { org_id: string; repo_id: string; default_branch: string; workflow_path: string; origin: string }[]
    >`
      UPDATE schedule s SET last_slot_at = ${a.slot}
      FROM repo r
      WHERE s.id = ${a.scheduleId}::uuid AND r.id = s.repo_id
        AND s.last_slot_at IS NOT DISTINCT FROM ${a.readLastSlotAt}::timestamptz
        AND (s.last_slot_at IS NULL OR s.last_slot_at < ${a.slot})
      RETURNING s.org_id, s.repo_id, r.default_branch, r.workflow_path, s.origin`;
    const sched = moved[0];
    if (!sched) return { kind: "taken" as const };
    const slotRow = await tx.$queryRaw<{ slot_at: Date }[]>`
      INSERT INTO schedule_slot (schedule_id, slot_at, org_id, commit_sha)
      VALUES (${a.scheduleId}::uuid, ${a.slot}, ${sched.org_id}::uuid, ${a.commitSha})
      ON CONFLICT (schedule_id, slot_at) DO NOTHING RETURNING slot_at`;
    if (!slotRow[0]) return { kind: "taken" as const };
    // Both origins are trusted sources: a member's API call, or a trusted push to the default branch.
    const trustClass = computeTrustClass({ kind: "schedule", recordedByTrustedSource: true });
    const ref = `refs/heads/${sched.default_branch}`;
    const runs = await tx.$queryRaw<{ id: string }[]>`
      INSERT INTO workflow_run (org_id, repo_id, status, trust_class, trigger, actor, ref, commit_sha, workflow_path, inputs)
      VALUES (${sched.org_id}::uuid, ${sched.repo_id}::uuid, 'pending', ${trustClass}, 'schedule', ${scheduledActor(a.scheduleId)},
              ${ref}, ${a.commitSha}, ${sched.workflow_path}, '{}'::jsonb)
      RETURNING id`;
    const runId = runs[0]?.id;
    if (!runId) throw new Error("run insert returned nothing");
    await tx.$executeRaw`
      UPDATE schedule_slot SET run_id = ${runId}::uuid WHERE schedule_id = ${a.scheduleId}::uuid AND slot_at = ${a.slot}`;
    await recordTransition(tx, {
      orgId: sched.org_id,
      runId,
      entity: "run",
      from: null,
      to: "pending",
      reason: "accepted",
      data: {
        trigger: "schedule",
        trust_class: trustClass,
        schedule_id: a.scheduleId,
        slot: a.slot.toISOString(),
        origin: sched.origin,
      },
    });
    await enqueueOutbox(tx, "run.freeze", { runId }, { dedupeKey: runId });
    return { kind: "admitted" as const, runId };
  });
}
