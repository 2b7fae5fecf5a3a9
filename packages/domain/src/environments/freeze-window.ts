import type { AbsoluteWindow, RecurringWindow, Weekday } from "./policy-schema.ts";

// Change-freeze windows in a time zone (issue 18). Local wall time comes from Intl (pure: the
// instant is passed in). A recurring window whose end is not after its start runs past midnight:
// it begins on a listed day and ends on the next.

const ORDER: Weekday[] = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];
const formatters = new Map<string, Intl.DateTimeFormat>();

function localParts(at: Date, timeZone: string): { day: Weekday; minutes: number } {
  let f = formatters.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat("en-US", {
      timeZone,
      weekday: "short",
      hour: "2-digit",
      minute: "2-digit",
      hourCycle: "h23",
    });
    formatters.set(timeZone, f);
  }
  const parts = f.formatToParts(at);
  const get = (t: string) => parts.find((p) => p.type === t)?.value ?? "";
  const day = get("weekday").toLowerCase().slice(0, 3) as Weekday;
  return { day, minutes: Number(get("hour")) * 60 + Number(get("minute")) };
}

const toMinutes = (hhmm: string) => Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5));

export function inWindow(w: RecurringWindow | AbsoluteWindow, at: Date): boolean {
  if ("start_at" in w) return at.getTime() >= Date.parse(w.start_at) && at.getTime() < Date.parse(w.end_at);
  const { day, minutes } = localParts(at, w.time_zone);
  const start = toMinutes(w.start);
  const end = toMinutes(w.end);
  const listed = (d: Weekday) => !w.days || w.days.includes(d);
  if (end > start) return listed(day) && minutes >= start && minutes < end;
  // Past midnight: the evening of a listed day, or the morning after one.
  const yesterday = ORDER[(ORDER.indexOf(day) + 6) % 7] ?? day;
  return (listed(day) && minutes >= start) || (listed(yesterday) && minutes < end);
}

export function describeWindow(w: RecurringWindow | AbsoluteWindow): string {
  const name = w.name ? `${w.name}: ` : "";
  if ("start_at" in w) return `${name}${w.start_at} to ${w.end_at}`;
  return `${name}${w.days ? w.days.join(",") : "every day"} ${w.start}-${w.end} ${w.time_zone}`;
}
