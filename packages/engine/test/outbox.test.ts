import { randomUUID } from "node:crypto";
import { PgBoss } from "pg-boss";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { claimJob } from "../src/dispatch/claim-job.ts";
import { relayOutbox, type OutboxMessage } from "../src/dispatch/relay-outbox.ts";
import {
  OUTBOX_TOPICS,
  parseOutboxMessage,
  type DispatchPayload,
  type OutboxTopicSpec,
} from "../src/shared/outbox-topics.ts";
import { def, newSession, ONE_JOB, seedFrozenRun, seedTenant, TEST_CFG, useTestDb } from "./support.ts";

const t = useTestDb();
let boss: PgBoss;

beforeAll(async () => {
  boss = new PgBoss({ connectionString: t.url(), max: 2 });
  await boss.start();
});
afterAll(async () => {
  await boss.stop({ graceful: false, close: true });
});

async function publishToBoss(messages: OutboxMessage[]): Promise<void> {
  for (const m of messages) {
    const { topic, payload } = parseOutboxMessage(m.topic, m.payload);
    const spec: OutboxTopicSpec = OUTBOX_TOPICS[topic];
    const queue = spec.queue(payload);
    if (!(await boss.getQueue(queue))) await boss.createQueue(queue);
    await boss.send(queue, payload);
  }
}

async function unpublished(): Promise<number> {
  const r = await t.db().$queryRaw<{ n: bigint }[]>`SELECT count(*) AS n FROM outbox WHERE published_at IS NULL`;
  return Number(r[0]?.n ?? 0n);
}

async function drain(queue: string) {
  const out: { id: string; data: DispatchPayload }[] = [];
  for (;;) {
    const got = await boss.fetch<DispatchPayload>(queue, { batchSize: 50 });
    if (got.length === 0) return out;
    out.push(...got.map((g) => ({ id: g.id, data: g.data })));
  }
}

describe("outbox relay crash windows", () => {
  it("crash before publishing: nothing is lost, the next pass publishes", async () => {
    const tenant = await seedTenant(t.db());
    await seedFrozenRun(t.db(), tenant, def(ONE_JOB));
    const before = await unpublished();
    expect(before).toBeGreaterThan(0);
    await expect(
      relayOutbox(t.db(), async () => {
        throw new Error("relay crashed before publish");
      }),
    ).rejects.toThrow();
    expect(await unpublished()).toBe(before);
    expect(await relayOutbox(t.db(), publishToBoss)).toBe(before);
    expect(await unpublished()).toBe(0);
    const msgs = await drain(`dispatch-${tenant.pool}`);
    expect(msgs).toHaveLength(1);
  });

  it("crash after publishing, before marking: republished, and the duplicate hint cannot claim twice", async () => {
    const tenant = await seedTenant(t.db());
    await seedFrozenRun(t.db(), tenant, def(ONE_JOB));
    await relayOutbox(t.db(), publishToBoss); // flush rows from other tests' seeds
    await drain(`dispatch-${tenant.pool}`);
    const tenant2 = await seedTenant(t.db());
    await seedFrozenRun(t.db(), tenant2, def(ONE_JOB));
    await expect(
      relayOutbox(t.db(), async (m) => {
        await publishToBoss(m);
        throw new Error("crashed after publish");
      }),
    ).rejects.toThrow();
    expect(await unpublished()).toBeGreaterThan(0);
    await relayOutbox(t.db(), publishToBoss);
    expect(await unpublished()).toBe(0);
    const hints = await drain(`dispatch-${tenant2.pool}`);
    expect(hints).toHaveLength(2);
    const [s1, s2] = [await newSession(t.db(), tenant2, 5, "a"), await newSession(t.db(), tenant2, 5, "b")];
    const results = await Promise.all(
      hints.map((h, i) =>
        claimJob(t.db(), TEST_CFG, {
          sessionId: i === 0 ? s1 : s2,
          claimRequestId: randomUUID(),
          offer: { jobId: h.data.jobId, generation: h.data.generation },
        }),
      ),
    );
    expect(results.filter((r) => r.kind === "claimed")).toHaveLength(1);
    const attempts = await t.db().$queryRaw<
      { n: bigint }[]
    >`SELECT count(*) AS n FROM attempt WHERE job_id = ${hints[0]!.data.jobId}::uuid`;
    expect(attempts[0]?.n).toBe(1n);
  });

  it("two relays at once publish each row once", async () => {
    const tenant = await seedTenant(t.db());
    const yaml = `version: 1\njobs:\n${Array.from({ length: 30 }, (_, i) => `  - {name: j${i}, needs: [], steps: [x]}\n`).join("")}`;
    await seedFrozenRun(t.db(), tenant, def(yaml));
    const seen: bigint[] = [];
    const collect = async (m: OutboxMessage[]) => {
      seen.push(...m.map((x) => x.id));
    };
    await Promise.all([
      relayOutbox(t.db(), collect, 10),
      relayOutbox(t.db(), collect, 10),
      relayOutbox(t.db(), collect, 10),
      relayOutbox(t.db(), collect, 10),
    ]);
    while ((await relayOutbox(t.db(), collect)) > 0) {
      /* drain */
    }
    expect(new Set(seen.map(String)).size).toBe(seen.length);
    expect(await unpublished()).toBe(0);
  });
});
