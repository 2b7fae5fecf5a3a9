import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FaultStack, sleep, type Tenant } from "./support/harness.ts";
import { LossyProxy } from "./support/lossy-proxy.ts";

// Failure table row 1, "Repeated webhook": the same event identity (X-GitHub-Delivery, or an
// Idempotency-Key for manual triggers) always resolves to the one run bound to it, whether the copies
// arrive together, after a lost response, or after the web process was killed mid-burst.
let s: FaultStack;
let t: Tenant;
let proxy: LossyProxy;

beforeAll(async () => {
  s = await FaultStack.create();
  t = await s.seedTenant("hooks", { ".kiln/workflow.yaml": 'version: 1\njobs:\n  - name: a\n    steps: ["true"]\n' });
  s.startWorkers();
  await s.startWeb();
  proxy = new LossyProxy(Number(new URL(s.baseUrl()).port));
  await proxy.start();
}, 180_000);
afterAll(async () => {
  await proxy?.stop();
  await s?.stop();
});

async function runsFor(deliveries: string[]): Promise<Map<string, string | null>> {
  const rows = await s.db.$queryRaw<{ delivery_id: string; run_id: string | null }[]>`
    SELECT delivery_id, run_id FROM webhook_delivery WHERE delivery_id = ANY(${deliveries}::text[])`;
  return new Map(rows.map((r) => [r.delivery_id, r.run_id]));
}

async function runCount(): Promise<number> {
  const r = await s.db.$queryRaw<{ n: bigint }[]>`SELECT count(*) AS n FROM workflow_run`;
  return Number(r[0]?.n ?? 0);
}

describe("repeated webhook", () => {
  it("20 concurrent copies of one delivery: one run, every answer names it", async () => {
    const before = await runCount();
    const answers = await Promise.all(Array.from({ length: 20 }, () => s.webhook(t, "same-delivery")));
    const created = answers.filter((a) => a.status === 202);
    expect(created).toHaveLength(1);
    const runId = created[0]!.json.run_id;
    for (const a of answers.filter((x) => x.status !== 202))
      expect(a).toEqual({ status: 200, json: { run_id: runId, duplicate: true } });
    expect(await runCount()).toBe(before + 1);
  });

  it("a delivery whose response was lost is redelivered: the redelivery returns the same run", async () => {
    const before = await runCount();
    proxy.dropResponses = true;
    const base = `http://127.0.0.1:${proxy.port}`;
    const lost = await Promise.all(
      ["lost-1", "lost-2", "lost-3"].map((d) =>
        s.webhook(t, d, { base }).then(
          () => "answered",
          () => "lost",
        ),
      ),
    );
    expect(lost).toEqual(["lost", "lost", "lost"]);
    proxy.dropResponses = false;
    // The server committed each acceptance before answering; the forge, seeing no answer, redelivers.
    const committed = await runsFor(["lost-1", "lost-2", "lost-3"]);
    expect([...committed.values()].every((r) => typeof r === "string")).toBe(true);
    for (const d of ["lost-1", "lost-2", "lost-3"]) {
      const again = await s.webhook(t, d);
      expect(again).toEqual({ status: 200, json: { run_id: committed.get(d), duplicate: true } });
    }
    expect(await runCount()).toBe(before + 3);
  });

  it("a manual trigger whose response was lost: retrying with the same Idempotency-Key returns the same run", async () => {
    const before = await runCount();
    proxy.dropResponses = true;
    const first = await s.trigger(t, "manual-lost", { base: `http://127.0.0.1:${proxy.port}` }).then(
      () => "answered",
      () => "lost",
    );
    proxy.dropResponses = false;
    expect(first).toBe("lost");
    const retries = await Promise.all([1, 2, 3].map(() => s.trigger(t, "manual-lost")));
    const ids = new Set(retries.map((r) => r.json.run_id));
    expect(retries.map((r) => r.status)).toEqual([202, 202, 202]);
    expect(ids.size).toBe(1);
    expect(await runCount()).toBe(before + 1);
  });

  it("web SIGKILLed during a burst of 30 deliveries and 30 manual triggers: after redelivery, exactly one run per identity", async () => {
    const before = await runCount();
    const deliveries = Array.from({ length: 30 }, (_, i) => `burst-${i}`);
    const keys = Array.from({ length: 30 }, (_, i) => `burst-key-${i}`);
    const first = Promise.all([
      ...deliveries.map((d, i) =>
        sleep(i * 15)
          .then(() => s.webhook(t, d))
          .then(
            (r) => r.status,
            () => "transport",
          ),
      ),
      ...keys.map((k, i) =>
        sleep(i * 15)
          .then(() => s.trigger(t, k))
          .then(
            (r) => r.status,
            () => "transport",
          ),
      ),
    ]);
    await sleep(200);
    await s.signal("web", "SIGKILL");
    const outcomes = await first;
    // Some requests were cut by the crash; they must be retried with the same identity.
    expect(outcomes.filter((o) => o === "transport").length).toBeGreaterThan(0);
    await s.restart("web");
    const replays = await Promise.all([...deliveries.map((d) => s.webhook(t, d)), ...keys.map((k) => retryManual(k))]);
    for (const r of replays.slice(0, 30)) expect([200, 202]).toContain(r.status);
    for (const r of replays.slice(30)) expect(r.status).toBe(202);
    const byDelivery = await runsFor(deliveries);
    expect(byDelivery.size).toBe(30);
    deliveries.forEach((d, i) => expect(replays[i]!.json.run_id).toBe(byDelivery.get(d)));
    const manualRuns = new Set(replays.slice(30).map((r) => r.json.run_id));
    expect(manualRuns.size).toBe(30);
    expect(await runCount()).toBe(before + 60);
  }, 120_000);
});

/** A key whose first request died between its two transactions answers 409 IN_FLIGHT until the takeover window passes. */
async function retryManual(key: string) {
  const deadline = Date.now() + 90_000;
  for (;;) {
    const r = await s.trigger(t, key);
    if (r.status !== 409 || Date.now() > deadline) return r;
    await sleep(1_000);
  }
}
