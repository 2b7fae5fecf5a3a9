import { describe, expect, it } from "vitest";
import {
  ATTEMPT_STATUSES,
  ATTEMPT_TRANSITIONS,
  isRunTerminal,
  JOB_STATUSES,
  JOB_TRANSITIONS,
  legalSources,
  RUN_STATUSES,
  RUN_TRANSITIONS,
} from "./run-state-machine.ts";

describe("legalSources: the source states of every status guard in the engine", () => {
  it("lists the sources of one event into one target", () => {
    expect(legalSources(RUN_TRANSITIONS, "cancel_requested", "completed")).toEqual(["pending"]);
    expect(legalSources(RUN_TRANSITIONS, "cancel_requested", "cancelling")).toEqual(["running"]);
    expect(legalSources(JOB_TRANSITIONS, "claimed", "running")).toEqual(["ready"]);
    expect(legalSources(JOB_TRANSITIONS, "skipped", "completed")).toEqual(["pending", "ready"]);
    expect(legalSources(ATTEMPT_TRANSITIONS, "ended", "completed")).toEqual(["running"]);
  });

  it("refuses a pair the table does not have, so a guard never silently matches nothing", () => {
    expect(() => legalSources(JOB_TRANSITIONS, "claimed", "completed")).toThrow(/no transition claimed -> completed/);
    expect(() => legalSources(RUN_TRANSITIONS, "frozen", "cancelling")).toThrow();
  });
});

describe("the tables", () => {
  const tables = [
    { name: "run", statuses: RUN_STATUSES as readonly string[], table: RUN_TRANSITIONS },
    { name: "job", statuses: JOB_STATUSES as readonly string[], table: JOB_TRANSITIONS },
    { name: "attempt", statuses: ATTEMPT_STATUSES as readonly string[], table: ATTEMPT_TRANSITIONS },
  ] as const;

  it.each(tables)("$name: completed is the only state nothing leaves", ({ statuses, table }) => {
    const pairs = Object.values(table).flat() as (readonly [string, string])[];
    const left = new Set(pairs.filter(([f, t]) => f !== t).map(([f]) => f));
    expect(statuses.filter((s) => !left.has(s))).toEqual(["completed"]);
  });

  it.each(tables)("$name: every state but the first is entered by some event", ({ statuses, table }) => {
    const pairs = Object.values(table).flat() as (readonly [string, string])[];
    const entered = new Set(pairs.filter(([f, t]) => f !== t).map(([, t]) => t));
    expect(statuses.filter((s) => !entered.has(s))).toEqual([statuses[0]]);
  });

  it("a job is cancelled at once only while nothing executes it", () => {
    expect(legalSources(JOB_TRANSITIONS, "cancelled", "completed")).not.toContain("running");
  });

  it("isRunTerminal holds for completed alone", () => {
    expect(RUN_STATUSES.filter(isRunTerminal)).toEqual(["completed"]);
  });
});
