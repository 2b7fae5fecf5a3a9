import { describe, expect, it } from "vitest";
import { dueSlot, specProblem, upcomingSlots } from "./cron-slots.ts";
import { decideTick, replaceWorkflowSchedules } from "./schedule-rules.ts";

const berlin = (cron: string) => ({ cron, timezone: "Europe/Berlin" });
const at = (iso: string) => new Date(iso);
const iso = (d: Date | null) => d?.toISOString() ?? null;

/** Every slot the scheduler admits between two instants when it ticks each minute, in UTC. */
function admittedBetween(spec: { cron: string; timezone: string }, from: string, to: string): string[] {
  let anchor = at(from);
  const out: string[] = [];
  for (let t = anchor.getTime(); t <= at(to).getTime(); t += 60_000) {
    const d = decideTick(
      { ...spec, id: "s", createdAt: at(from), lastSlotAt: out.length ? anchor : null },
      new Date(t),
    );
    if (d.kind === "admit") {
      expect(d.anchor.getTime()).toBe(anchor.getTime());
      anchor = d.slot;
      out.push(d.slot.toISOString());
    }
  }
  return out;
}

describe("cron slots in Europe/Berlin", () => {
  it("runs 03:00 daily at 03:00 local on either side of the spring-forward change", () => {
    // 2026-03-29: 02:00 CET jumps to 03:00 CEST (01:00Z).
    expect(admittedBetween(berlin("0 3 * * *"), "2026-03-27T12:00:00Z", "2026-03-30T12:00:00Z")).toEqual([
      "2026-03-28T02:00:00.000Z", // 03:00 CET
      "2026-03-29T01:00:00.000Z", // 03:00 CEST, the first hour of summer time
      "2026-03-30T01:00:00.000Z",
    ]);
  });

  it("runs a wall time the spring-forward gap skips once, an hour later by the clock", () => {
    // 02:30 does not exist on 2026-03-29: one run, at 03:30 CEST, and none lost or doubled.
    expect(admittedBetween(berlin("30 2 * * *"), "2026-03-27T12:00:00Z", "2026-03-30T12:00:00Z")).toEqual([
      "2026-03-28T01:30:00.000Z",
      "2026-03-29T01:30:00.000Z",
      "2026-03-30T00:30:00.000Z",
    ]);
  });

  it("runs a wall time the fall-back hour repeats once, at its first occurrence", () => {
    // 2026-10-25: 03:00 CEST falls back to 02:00 CET (01:00Z); 02:30 happens at 00:30Z and 01:30Z.
    expect(admittedBetween(berlin("30 2 * * *"), "2026-10-24T12:00:00Z", "2026-10-26T12:00:00Z")).toEqual([
      "2026-10-25T00:30:00.000Z",
      "2026-10-26T01:30:00.000Z",
    ]);
  });

  it("keeps an hourly schedule's real-time spacing through the repeated hour", () => {
    expect(admittedBetween(berlin("0 * * * *"), "2026-10-24T23:30:00Z", "2026-10-25T03:10:00Z")).toEqual([
      "2026-10-25T00:00:00.000Z", // 02:00 CEST
      "2026-10-25T01:00:00.000Z", // 02:00 CET
      "2026-10-25T02:00:00.000Z",
      "2026-10-25T03:00:00.000Z",
    ]);
  });

  it("agrees with Intl about the local wall time of every slot", () => {
    const local = new Intl.DateTimeFormat("en-GB", { timeZone: "Europe/Berlin", hour: "2-digit", minute: "2-digit" });
    for (const s of admittedBetween(berlin("15 4 * * *"), "2026-03-27T00:00:00Z", "2026-04-01T00:00:00Z"))
      expect(local.format(at(s))).toBe("04:15");
  });
});

describe("due slot", () => {
  it("admits a missed stretch once, the latest slot, however many passed", () => {
    // Down from 03:05 on the 1st to 09:40 on the 4th: three 03:00 slots passed, one run.
    expect(iso(dueSlot(berlin("0 3 * * *"), at("2026-06-01T01:05:00Z"), at("2026-06-04T07:40:00Z")))).toBe(
      "2026-06-04T01:00:00.000Z",
    );
    // A per-minute schedule after a 40-day outage walks far fewer steps than it has slots, still one.
    expect(
      iso(dueSlot({ cron: "* * * * *", timezone: "UTC" }, at("2026-01-01T00:00:00Z"), at("2026-02-10T10:10:30Z"))),
    ).toBe("2026-02-10T10:10:00.000Z");
  });

  it("admits nothing before the first slot after the anchor, and the slot at exactly its instant", () => {
    const spec = { cron: "*/5 * * * *", timezone: "UTC" };
    expect(dueSlot(spec, at("2026-06-01T10:00:00Z"), at("2026-06-01T10:04:59Z"))).toBeNull();
    expect(iso(dueSlot(spec, at("2026-06-01T10:00:00Z"), at("2026-06-01T10:05:00Z")))).toBe("2026-06-01T10:05:00.000Z");
    // The anchor slot itself is never due again (the walk is strictly after it).
    expect(dueSlot(spec, at("2026-06-01T10:05:00Z"), at("2026-06-01T10:09:00Z"))).toBeNull();
  });

  it("gives two workers ticking at different moments of one minute the same slot", () => {
    const spec = berlin("* * * * *");
    const a = dueSlot(spec, at("2026-10-25T00:58:00Z"), at("2026-10-25T01:00:00.100Z"));
    const b = dueSlot(spec, at("2026-10-25T00:58:00Z"), at("2026-10-25T01:00:59.900Z"));
    expect(iso(a)).toBe("2026-10-25T01:00:00.000Z");
    expect(iso(b)).toBe(iso(a));
  });

  it("shows the next slots on the same walk", () => {
    expect(
      upcomingSlots(berlin("30 2 * * *"), at("2026-10-24T00:30:00Z"), at("2026-10-24T12:00:00Z"), 2).map((d) =>
        d.toISOString(),
      ),
    ).toEqual(["2026-10-25T00:30:00.000Z", "2026-10-26T01:30:00.000Z"]);
  });
});

describe("schedule specs", () => {
  it("accepts five fields and named schedules in a known zone", () => {
    expect(specProblem(berlin("0 3 * * *"))).toBeNull();
    expect(specProblem({ cron: "@daily", timezone: "UTC" })).toBeNull();
    expect(specProblem({ cron: "0 9 * * MON-FRI", timezone: "America/New_York" })).toBeNull();
    expect(specProblem({ cron: "0 9 * * THU", timezone: "UTC" })).toBeNull();
  });

  it("refuses seconds, random H values, bad fields and unknown zones by name", () => {
    expect(specProblem({ cron: "0 0 3 * * *", timezone: "UTC" })?.field).toBe("cron");
    expect(specProblem({ cron: "H 3 * * *", timezone: "UTC" })?.message).toMatch(/H/);
    expect(specProblem({ cron: "61 * * * *", timezone: "UTC" })?.message).toMatch(/invalid cron/);
    expect(specProblem({ cron: "@secondly", timezone: "UTC" })?.field).toBe("cron");
    expect(specProblem(berlin(""))?.field).toBe("cron");
    expect(specProblem({ cron: "0 3 * * *", timezone: "Mars/Olympus" })).toEqual({
      field: "timezone",
      message: 'unknown time zone "Mars/Olympus"',
    });
  });
});

describe("replacing a workflow's schedules", () => {
  it("keeps identical entries (their anchors), removes dropped ones and adds new ones", () => {
    const r = replaceWorkflowSchedules(
      [
        { id: "a", cron: "0 3 * * *", timezone: "Europe/Berlin" },
        { id: "b", cron: "0 4 * * *", timezone: "UTC" },
        { id: "c", cron: "0  3 * * *", timezone: "Europe/Berlin" },
      ],
      [berlin("0 3 * * *"), { cron: "*/10 * * * *", timezone: "UTC" }],
    );
    expect(r).toEqual({ keep: ["a"], remove: ["b", "c"], add: [{ cron: "*/10 * * * *", timezone: "UTC" }] });
  });
});
