import { CronExpressionParser, type CronExpression } from "cron-parser";

// Cron slots (issue 20). A slot is an instant at which a schedule admits one run. Slots are the
// instants cron-parser's forward iteration yields in the schedule's time zone (resolved through
// Intl by its luxon dependency); we never use its backward iteration, which disagrees with the
// forward one around daylight-saving changes (a fall-back hour's second 02:30 is yielded backwards
// but skipped forwards). So every reader walks forward from the same stored anchor (the last
// admitted slot, or the schedule's creation) and two workers compute the same slot.
//
// Daylight saving, as the forward walk has it and the tests pin: a wall time that does not exist
// (Europe/Berlin 02:30 on the spring-forward day) runs once, an hour later by the clock (03:30
// CEST); a wall time that exists twice (02:30 on the fall-back day) runs once, at its first
// occurrence. Schedules finer than an hour keep their real-time spacing across both changes.

export interface ScheduleSpec {
  cron: string;
  timezone: string;
}

export type SpecProblem = { field: "cron" | "timezone"; message: string };

export const SCHEDULE_LIMITS = { maxPerRepo: 20, maxCronLength: 100 } as const;

/** Forward steps one computation may take before it re-anchors near `now` (a long outage of a per-minute schedule). */
const MAX_STEPS = 50_000;
const REANCHOR_MS = 48 * 3_600_000;

/** Whether the time zone is an IANA name this runtime's Intl knows. */
export function isKnownTimeZone(tz: string): boolean {
  if (tz.length === 0 || tz.length > 64) return false;
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

/**
 * Five fields (minute hour day-of-month month day-of-week) or a predefined @daily-style name; no
 * seconds field (a slot is a minute) and no `H` (cron-parser fills it from a random source, and
 * two workers must agree on every slot).
 */
export function specProblem(spec: ScheduleSpec): SpecProblem | null {
  const cron = spec.cron.trim();
  if (cron.length === 0 || cron.length > SCHEDULE_LIMITS.maxCronLength)
    return { field: "cron", message: `cron must be 1-${SCHEDULE_LIMITS.maxCronLength} characters` };
  if (!isKnownTimeZone(spec.timezone))
    return { field: "timezone", message: `unknown time zone ${JSON.stringify(spec.timezone.slice(0, 64))}` };
  // THU is the only field name with an H in it.
  if (/h/i.test(cron.replace(/^@\w+$/, "").replace(/thu/gi, "")))
    return { field: "cron", message: "cron may not use H (random) values" };
  if (!cron.startsWith("@") && cron.split(/\s+/).length !== 5)
    return { field: "cron", message: "cron needs five fields: minute hour day-of-month month day-of-week" };
  if (cron === "@secondly" || cron === "@minutely")
    return { field: "cron", message: `${cron} is not supported; use "* * * * *"` };
  try {
    const e = CronExpressionParser.parse(cron, { tz: spec.timezone, currentDate: new Date(0), strict: false });
    if (e.fields.second.values.length !== 1 || e.fields.second.values[0] !== 0)
      return { field: "cron", message: "cron may not have a seconds field" };
  } catch (err) {
    return {
      field: "cron",
      message: `invalid cron ${JSON.stringify(cron)}: ${err instanceof Error ? err.message : String(err)}`,
    };
  }
  return null;
}

function walker(spec: ScheduleSpec, from: Date): CronExpression {
  return CronExpressionParser.parse(spec.cron.trim(), { tz: spec.timezone, currentDate: from });
}

/**
 * The slot to admit now: the latest slot after `anchor` and at or before `now`, or null when none
 * is due. However many slots passed since the anchor (Kiln was down), only the latest is returned:
 * a missed stretch runs once on recovery.
 */
export function dueSlot(spec: ScheduleSpec, anchor: Date, now: Date): Date | null {
  let from = anchor;
  if (now.getTime() <= from.getTime()) return null;
  for (let pass = 0; pass < 2; pass++) {
    const it = walker(spec, from);
    let latest: Date | null = null;
    let steps = 0;
    for (; steps < MAX_STEPS; steps++) {
      const next = it.next().toDate();
      if (next.getTime() > now.getTime()) return latest;
      latest = next;
    }
    // A per-minute schedule after a month down: walk the last two days only (slots there are what
    // the walk from the anchor yields too, except within an hour of a fall-back change).
    from = new Date(Math.max(anchor.getTime(), now.getTime() - REANCHOR_MS));
  }
  return null;
}

/** The next `count` slots after `now` (shown in the dashboard and the API), on the anchor's walk. */
export function upcomingSlots(spec: ScheduleSpec, anchor: Date, now: Date, count: number): Date[] {
  const start = anchor.getTime() > now.getTime() ? anchor : (dueSlot(spec, anchor, now) ?? anchor);
  const it = walker(spec, start.getTime() < now.getTime() - REANCHOR_MS ? now : start);
  const out: Date[] = [];
  for (let i = 0; out.length < count && i < MAX_STEPS; i++) {
    const next = it.next().toDate();
    if (next.getTime() > now.getTime()) out.push(next);
  }
  return out;
}
