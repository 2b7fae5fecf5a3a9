import { describe, expect, it } from "vitest";
import { completeAttempt, engineEnvSchema } from "@kiln/engine";
import {
  bytes,
  claim,
  claimsOf,
  def,
  newSession,
  publish,
  seedFrozenRun,
  seedTenant,
  TEST_CFG,
  useS3,
  useTestDb,
} from "@kiln/engine/testing";
import { runRetention } from "./enforce-retention.job.ts";

// Run-it-twice (conventions rule 9): the second pass at the same instant finds nothing and changes nothing.
const t = useTestDb();
const s3 = useS3();
// The platform windows as the workers parse them from an unset KILN_RETENTION_WINDOWS: the seed's.
const WINDOWS = engineEnvSchema.shape.KILN_RETENTION_WINDOWS.parse(undefined);

const WORKFLOW = `version: 1
jobs:
  - name: build
    steps: [make]
    artifacts:
      publish:
        - name: app
          path: out/app
`;

describe("enforce-retention job", () => {
  it("evicts an expired artifact once, with one audit record; running it again is a no-op", async () => {
    const tenant = await seedTenant(t.db());
    const runId = await seedFrozenRun(t.db(), tenant, def(WORKFLOW), "trusted", "refs/heads/topic");
    const tk = (await claim(t.db(), await newSession(t.db(), tenant)))!;
    const genId = await publish(t.db(), s3.store(), tk, "app", bytes(3000, 7));
    await completeAttempt(t.db(), TEST_CFG, { ...claimsOf(tk), outcome: "success", sandboxDestroyed: true });
    const [g] = await t.db().$queryRaw<{ expires_at: Date }[]>`
      SELECT expires_at FROM artifact_generation WHERE id = ${genId}::uuid`;
    const at = g!.expires_at;

    const snapshot = async () => t.db().$queryRaw<
      { expired: boolean; deleted: boolean; audits: bigint; events: bigint }[]
    >`
      SELECT g.expired_at IS NOT NULL AS expired, g.object_deleted_at IS NOT NULL AS deleted,
             (SELECT count(*) FROM audit_event WHERE kind = 'retention.evicted' AND subject = 'artifact:' || g.id::text) AS audits,
             (SELECT count(*) FROM transition_event WHERE run_id = ${runId}::uuid) AS events
      FROM artifact_generation g WHERE g.id = ${genId}::uuid`;
    const first = await runRetention(t.db(), s3.store(), WINDOWS, at);
    expect(first.evicted.artifact).toBe(1);
    const after = await snapshot();
    expect(after[0]).toMatchObject({ expired: true, deleted: true, audits: 1n });
    const second = await runRetention(t.db(), s3.store(), WINDOWS, at);
    expect(second).toMatchObject({
      evicted: { artifact: 0, log: 0, run_metadata: 0 },
      objectsDeleted: 0,
      stampedRuns: 0,
    });
    expect(await snapshot()).toEqual(after);
  });
});
