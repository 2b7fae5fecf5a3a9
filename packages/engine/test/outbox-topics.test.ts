import { randomUUID } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { sign } from "@octokit/webhooks-methods";
import { withTx } from "@kiln/db";
import { describe, expect, it } from "vitest";
import { completeAttempt } from "../src/attempts/complete-attempt.ts";
import { claimJob } from "../src/dispatch/claim-job.ts";
import { sealSecret } from "../src/forge/secret-box.ts";
import { enqueueOutbox } from "../src/shared/journal.ts";
import {
  isOutboxTopic,
  OUTBOX_TOPICS,
  OutboxContractError,
  parseOutboxMessage,
  type OutboxPayloadOf,
  type OutboxTopic,
  type OutboxTopicSpec,
} from "../src/shared/outbox-topics.ts";
import { admitGithubWebhook } from "../src/webhooks/admit-webhook.ts";
import { forgeCfg, pushPayload } from "./forge/support.ts";
import { def, newSession, seedFrozenRun, seedTenant, TEST_CFG, TWO_JOBS, useTestDb } from "./support.ts";

const t = useTestDb();
const SRC = fileURLToPath(new URL("../src", import.meta.url));

/** One valid payload per topic: the mapped type makes a topic added to the registry fail here first. */
const SAMPLES: { [T in OutboxTopic]: OutboxPayloadOf<T> } = {
  "run.freeze": { runId: randomUUID() },
  "job.dispatch": { jobId: randomUUID(), runId: randomUUID(), orgId: randomUUID(), pool: "default", generation: 1 },
  "forge.status": { runId: randomUUID() },
  "attestation.create": { jobId: randomUUID(), runId: randomUUID(), orgId: randomUUID(), epoch: 1 },
  "attestation.verify": { attestationId: randomUUID() },
  "environment.pointer_moved": {
    orgId: randomUUID(),
    repoId: randomUUID(),
    environmentId: randomUUID(),
    promotionId: randomUUID(),
    kind: "promote",
    generationId: randomUUID(),
    digest: "a".repeat(64),
    attestationId: null,
    pointerSeq: "7",
  },
};

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sourceFiles(path.join(dir, e.name)) : e.name.endsWith(".ts") ? [path.join(dir, e.name)] : [],
  );
}

describe("the outbox topic registry", () => {
  it("gives every topic a schema, a queue and a delivery", () => {
    for (const [topic, sample] of Object.entries(SAMPLES)) {
      const spec: OutboxTopicSpec = OUTBOX_TOPICS[topic as OutboxTopic];
      const parsed = parseOutboxMessage(topic, sample);
      expect(parsed.payload).toEqual(sample);
      expect(spec.queue(parsed.payload)).toMatch(/^[a-z][a-z0-9-]+$/);
      expect(["send", "batch", "dispatch-hint"]).toContain(spec.delivery);
      if (spec.delivery === "dispatch-hint") expect(spec.pool?.(parsed.payload)).toBe("default");
    }
    expect(Object.keys(OUTBOX_TOPICS).sort()).toEqual(Object.keys(SAMPLES).sort());
  });

  it("derives the per-row keys the relay used to compute by hand", () => {
    const moved = SAMPLES["environment.pointer_moved"];
    expect(OUTBOX_TOPICS["environment.pointer_moved"].singletonKey?.(moved)).toBe(`${moved.environmentId}:7`);
    expect(OUTBOX_TOPICS["forge.status"].singletonKey?.(SAMPLES["forge.status"])).toBe(SAMPLES["forge.status"].runId);
    expect(OUTBOX_TOPICS["job.dispatch"].queue(SAMPLES["job.dispatch"])).toBe("dispatch-default");
  });

  it("refuses an unknown topic and a payload that does not parse", () => {
    expect(isOutboxTopic("run.melt")).toBe(false);
    expect(isOutboxTopic("toString")).toBe(false);
    expect(() => parseOutboxMessage("run.melt", { runId: randomUUID() })).toThrow(OutboxContractError);
    expect(() => parseOutboxMessage("run.freeze", { runId: "not-a-uuid" })).toThrow(/does not parse/);
    expect(() => parseOutboxMessage("job.dispatch", { ...SAMPLES["job.dispatch"], generation: "1" })).toThrow(
      OutboxContractError,
    );
  });

  it("enqueueOutbox refuses what the registry refuses, and writes nothing", async () => {
    const key = randomUUID();
    await expect(
      withTx(t.db(), "test-bad-outbox", (tx) =>
        enqueueOutbox(tx, "run.melt" as OutboxTopic, { runId: key } as never, { dedupeKey: key }),
      ),
    ).rejects.toThrow(/unknown outbox topic/);
    await expect(
      withTx(t.db(), "test-bad-outbox", (tx) =>
        enqueueOutbox(tx, "attestation.verify", { attestationId: "x" }, { dedupeKey: key }),
      ),
    ).rejects.toThrow(OutboxContractError);
    const rows = await t.db().$queryRaw<
      { n: number }[]
    >`SELECT count(*)::int AS n FROM outbox WHERE dedupe_key = ${key}`;
    expect(rows[0]?.n).toBe(0);
  });

  it("no SQL in the engine names a topic as a literal: every outbox insert takes it as a parameter", () => {
    const inserts: string[] = [];
    for (const file of sourceFiles(SRC)) {
      const text = readFileSync(file, "utf8");
      for (const m of text.matchAll(/INSERT INTO outbox\s*\([^)]*\)\s*(VALUES\s*\(|SELECT\s+)([^,]+),/g)) {
        inserts.push(`${path.relative(SRC, file)}: ${m[2]}`);
        expect(m[2], `${path.relative(SRC, file)} writes a literal topic`).not.toMatch(/'/);
      }
      // The names SQL producers pass are checked by tsc (`satisfies OutboxTopic`); and here.
      for (const m of text.matchAll(/"([a-z_.]+)" satisfies OutboxTopic|: OutboxTopic = "([a-z_.]+)"/g))
        expect(isOutboxTopic(m[1] ?? m[2] ?? ""), `${file}: ${m[0]}`).toBe(true);
    }
    // journal (enqueueOutbox, forge.status), webhooks (run.freeze, forge.status), runs (job.dispatch),
    // attestation (attestation.verify): if one is rewritten without the pattern this count drops.
    expect(inserts.length).toBe(6);
  });

  it("every row the SQL producers write is a registered topic whose payload parses", async () => {
    // A repo with a forge credential, so admission and transitions queue forge.status too.
    const tenant = await seedTenant(t.db());
    const cfg = forgeCfg("http://127.0.0.1:9");
    await t.db().$executeRaw`
      INSERT INTO repo_forge (repo_id, token_enc) VALUES (${tenant.repoId}::uuid, ${sealSecret(cfg.secretsKey!, "ghp_x", tenant.repoId)})`;
    // Webhook admission (one CTE): run.freeze and forge.status.
    const body = JSON.stringify(pushPayload(tenant.repoName, "c".repeat(40), 1));
    const admitted = await admitGithubWebhook(t.db(), {
      rawBody: Buffer.from(body),
      signature: await sign("s3cret-value", body),
      event: "push",
      deliveryId: randomUUID(),
    });
    expect(admitted.status).toBe(202);
    // makeJobsReady (job.dispatch) and a completed job's transition (recordTransition: forge.status).
    const runId = await seedFrozenRun(t.db(), tenant, def(TWO_JOBS));
    const session = await newSession(t.db(), tenant);
    const c = await claimJob(t.db(), TEST_CFG, { sessionId: session, claimRequestId: randomUUID() });
    if (c.kind !== "claimed") throw new Error("nothing claimed");
    await completeAttempt(t.db(), TEST_CFG, { ...c.ticket, outcome: "success", sandboxDestroyed: true });

    const rows = await t.db().$queryRaw<{ topic: string; payload: unknown }[]>`
      SELECT topic, payload FROM outbox WHERE payload->>'runId' IN (${admitted.runId}, ${runId})`;
    const topics = new Set(rows.map((r) => parseOutboxMessage(r.topic, r.payload).topic));
    expect([...topics].sort()).toEqual(["forge.status", "job.dispatch", "run.freeze"]);
  });
});
