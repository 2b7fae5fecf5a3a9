// When a data key dies (issue 21, docs/adr/0037). A data key covers one org, one UTC day D and one
// retention class; its platform wrapping key is the key of its due day, so every data key due at
// the same instant shares one platform key, and destroying that key file kills exactly them.
//
// due = start of (D + 1) + window: the moment the last object written on D reaches its window, so
// nothing is destroyed before its own expiry and nothing outlives it by more than a day.
import { DomainError } from "../shared/errors.ts";

const DAY_MS = 86_400_000;
const DAY = /^\d{4}-\d{2}-\d{2}$/;

/** What is sealed under data keys (shred_data_key.kind, shred_object.kind). */
export const SHRED_DATA_KINDS = ["artifact", "log"] as const;
export type ShredKind = (typeof SHRED_DATA_KINDS)[number];

/** Destruction evidence kinds (shred_destruction.key_kind). */
export const SHRED_KEY_KINDS = ["data_key", "platform_key"] as const;
export type ShredKeyKind = (typeof SHRED_KEY_KINDS)[number];

/** What a deletion sample found on one read path (shred_sample.outcome). */
export const SHRED_SAMPLE_OUTCOMES = ["unreadable", "leak"] as const;
export type ShredSampleOutcome = (typeof SHRED_SAMPLE_OUTCOMES)[number];

/** The read paths the sampler tries (shred_sample.path). */
export const SHRED_READ_PATHS = ["api_download", "raw_log", "log_stream", "object_get"] as const;
export type ShredReadPath = (typeof SHRED_READ_PATHS)[number];

/** The UTC day an instant falls on, as YYYY-MM-DD. */
export function shredDay(at: Date): string {
  return at.toISOString().slice(0, 10);
}

export function dayStart(day: string): Date {
  if (!DAY.test(day)) throw new DomainError("SHRED.BAD_FORMAT", `day ${day} is not YYYY-MM-DD`);
  const d = new Date(`${day}T00:00:00.000Z`);
  if (Number.isNaN(d.getTime()) || shredDay(d) !== day)
    throw new DomainError("SHRED.BAD_FORMAT", `day ${day} is not a calendar day`);
  return d;
}

/** The due day (the platform key's id) of a data key for day D and a window in whole days. */
export function shredDueDay(day: string, windowDays: number): string {
  if (!Number.isInteger(windowDays) || windowDays < 0)
    throw new DomainError("SHRED.BAD_FORMAT", `retention window ${windowDays} is not a whole number of days`);
  return shredDay(new Date(dayStart(day).getTime() + (windowDays + 1) * DAY_MS));
}

/** The instant a due day's keys are destroyed: its first millisecond. */
export function shredDueAt(dueDay: string): Date {
  return dayStart(dueDay);
}

/** Due days whose keys must be gone at `now`, from the ones that still exist. */
export function dueDaysAt(existing: readonly string[], now: Date): string[] {
  return existing.filter((d) => shredDueAt(d).getTime() <= now.getTime()).sort();
}

/**
 * Which day's data key a re-seal (docs/adr/0037 "Reseal") writes under: the key of `now`'s day
 * when it is due after `mustOutlive`, else the first later day whose key is. A key of a future day
 * is an ordinary key of that day (writers of that day share it); it only has to die later.
 */
export function resealKeyAt(now: Date, windowDays: number, mustOutlive: Date): Date {
  if (shredDueAt(shredDueDay(shredDay(now), windowDays)).getTime() > mustOutlive.getTime()) return now;
  // due(X) = X + (window + 1) days > mustOutlive  <=>  X > mustOutlive - (window + 1) days.
  const latest = new Date(mustOutlive.getTime() - (windowDays + 1) * DAY_MS);
  return new Date(dayStart(shredDay(latest)).getTime() + DAY_MS);
}
