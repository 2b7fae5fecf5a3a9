import { randomUUID } from "node:crypto";
import { useTestDb } from "@kiln/engine/testing";
import { silentLogger } from "@kiln/logger";
import { PgBoss } from "pg-boss";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OutboxRelay } from "./relay.ts";

// The table-driven relay (ADR 0038) against real PostgreSQL and pg-boss: each topic lands in the
// queue its registry entry names, with its singleton key; a row no consumer could take is not sent
// and does not hold back the others. (The stately forge-status queue would collapse the duplicate
// status with or without its singleton key; the key itself is checked in the registry test.)
const t = useTestDb();
let boss: PgBoss;

beforeAll(async () => {
  boss = new PgBoss({ connectionString: t.url(), max: 2 });
  await boss.start();
  await boss.createQueue("forge-status", { policy: "stately" });
});
afterAll(async () => {
  await boss.stop({ graceful: false, close: true });
});

describe("the outbox relay", () => {
  it("delivers each topic as its registry entry says, and refuses a row outside the registry", async () => {
    const runId = randomUUID();
    const attestationId = randomUUID();
    const rows: [string, object][] = [
      ["run.melt", {}],
      ["run.freeze", { runId }],
      ["forge.status", { runId }],
      ["forge.status", { runId }],
      ["attestation.verify", { attestationId }],
    ];
    for (const [topic, payload] of rows)
      await t.db()
        .$executeRaw`INSERT INTO outbox (topic, payload) VALUES (${topic}, ${JSON.stringify(payload)}::jsonb)`;
    const woken: string[] = [];
    const relay = new OutboxRelay(t.db(), boss, t.url(), 50, false, silentLogger, (q) => woken.push(q));
    await relay.start();
    for (let i = 0; i < 100; i++) {
      const left = await t.db().$queryRaw<
        { n: number }[]
      >`SELECT count(*)::int AS n FROM outbox WHERE published_at IS NULL`;
      if (left[0]?.n === 0) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    relay.stop();
    const freeze = await boss.fetch<{ runId: string }>("run-freeze");
    expect(freeze.map((j) => j.data)).toEqual([{ runId }]);
    const verify = await boss.fetch<{ attestationId: string }>("verify-attestation");
    expect(verify.map((j) => j.data)).toEqual([{ attestationId }]);
    // Stately queue + singleton key: the second status for the same run collapsed into the first.
    const status = await boss.fetch<{ runId: string }>("forge-status", { batchSize: 10 });
    expect(status.map((j) => j.data)).toEqual([{ runId }]);
    expect(woken.sort()).toEqual(["run-freeze", "verify-attestation"]);
    expect(await boss.getQueue("run-melt")).toBeNull();
  });
});
