import { OUTBOX_TOPICS, type OutboxTopic, type OutboxTopicSpec } from "@kiln/engine";
import { describe, expect, it } from "vitest";
import { JOBS } from "./registry.ts";

// The outbox topic registry (ADR 0038) names the queue the relay sends each topic to; the job that
// consumes that queue must exist and take exactly the topic's schema, not a copy of it.
describe("outbox topics and the jobs that consume them", () => {
  it("every topic delivered to a worker queue has one job of that name, whose payload is the topic's schema", () => {
    const consumed = Object.entries(OUTBOX_TOPICS).filter(([, spec]) => spec.delivery !== "dispatch-hint");
    expect(consumed.length).toBeGreaterThan(0);
    for (const [topic, s] of consumed) {
      const spec: OutboxTopicSpec = s;
      // Queues of these topics do not depend on the payload: any payload names the same one.
      const queue = spec.queue({} as never);
      const jobs = JOBS.filter((j) => j.name === queue);
      expect(jobs, `${topic} -> ${queue}`).toHaveLength(1);
      expect(jobs[0]?.payload, `${topic}'s job parses the topic's own schema`).toBe(
        OUTBOX_TOPICS[topic as OutboxTopic].payload,
      );
    }
  });

  it("a topic's stately queue is the job's policy: the relay's singleton key needs it", () => {
    for (const [topic, s] of Object.entries(OUTBOX_TOPICS)) {
      const spec: OutboxTopicSpec = s;
      if (spec.singletonKey === undefined || spec.ensureQueue) continue;
      // The relay does not create such a queue (it would create it standard): the worker does.
      const job = JOBS.find((j) => j.name === spec.queue({} as never));
      expect(job?.policy, topic).toBe("stately");
    }
  });
});

describe("job definitions carry their schedule and tick", () => {
  it("every scheduled or ticked job takes the empty payload its cron and its ticker give it", () => {
    const timed = JOBS.filter((j) => j.schedule !== undefined || j.tick !== undefined);
    // The ten crons and the five tickers index.ts used to spell out one by one.
    expect(timed.filter((j) => j.schedule).length).toBe(14);
    expect(timed.filter((j) => j.tick).map((j) => j.name)).toEqual([
      "reconcile",
      "archive-logs",
      "forge-reconcile",
      "run-schedules",
      "sign-tlog-checkpoint",
    ]);
    for (const j of timed) {
      expect(j.payload.safeParse({}).success, j.name).toBe(true);
      if (j.schedule) expect(j.schedule.split(" "), j.name).toHaveLength(5);
      // A ticked job keeps a cron as the backstop if its ticker wedges.
      if (j.tick) expect(j.schedule, j.name).toBeDefined();
    }
    expect(new Set(JOBS.map((j) => j.name)).size).toBe(JOBS.length);
  });
});
