import type { ScheduleSpec } from "./cron-slots.ts";
import { dueSlot } from "./cron-slots.ts";

// What a scheduler tick does with one schedule, and how a default-branch commit's declared
// schedules replace the recorded ones. Pure: the tick's clock and the stored rows are passed in.

export interface StoredSchedule extends ScheduleSpec {
  id: string;
  createdAt: Date;
  /** The last slot a run was admitted for; the forward walk starts here (or at creation). */
  lastSlotAt: Date | null;
}

export type TickDecision = { kind: "admit"; slot: Date; anchor: Date } | { kind: "idle" };

/**
 * Admit the due slot, if any. The anchor is returned so the admission can compare-and-set the
 * schedule's last slot against it: of two workers that read the same anchor, one admits.
 */
export function decideTick(s: StoredSchedule, now: Date): TickDecision {
  const anchor = s.lastSlotAt ?? s.createdAt;
  const slot = dueSlot(s, anchor, now);
  return slot ? { kind: "admit", slot, anchor } : { kind: "idle" };
}

export interface ScheduleReplacement {
  /** Recorded schedules the new file still declares: kept with their anchors (no slot re-runs). */
  keep: string[];
  /** Recorded schedules the new file no longer declares. */
  remove: string[];
  /** Declared schedules not recorded yet. */
  add: ScheduleSpec[];
}

function keyOf(s: ScheduleSpec): string {
  return `${s.cron.trim().replace(/\s+/g, " ")}\u0000${s.timezone}`;
}

/** A later default-branch commit's `schedules:` replace the file's earlier ones; identical entries keep their row. */
export function replaceWorkflowSchedules(
  recorded: readonly { id: string; cron: string; timezone: string }[],
  declared: readonly ScheduleSpec[],
): ScheduleReplacement {
  const wanted = new Map(declared.map((d) => [keyOf(d), d]));
  const keep: string[] = [];
  const remove: string[] = [];
  const seen = new Set<string>();
  for (const r of recorded) {
    const k = keyOf(r);
    if (wanted.has(k) && !seen.has(k)) {
      keep.push(r.id);
      seen.add(k);
    } else remove.push(r.id);
  }
  const add = [...wanted.entries()].filter(([k]) => !seen.has(k)).map(([, d]) => d);
  return { keep, remove, add };
}

/** The run a slot admits is named after it, so a retried admission is recognisably the same. */
export function scheduledActor(scheduleId: string): string {
  return `schedule:${scheduleId}`;
}

/** Where a schedule came from (schedule.origin): the workflow file on the default branch, or the API/CLI. */
export const SCHEDULE_ORIGINS = ["workflow", "api"] as const;
export type ScheduleOrigin = (typeof SCHEDULE_ORIGINS)[number];
