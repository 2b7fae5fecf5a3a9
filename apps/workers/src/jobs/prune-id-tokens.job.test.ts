import { randomBytes, randomUUID } from "node:crypto";
import { claimJob, kekFromBytes, mintIdToken, rotateIdTokenKey } from "@kiln/engine";
import { def, newSession, ONE_JOB, seedFrozenRun, seedTenant, TEST_CFG, useTestDb } from "@kiln/engine/testing";
import { describe, expect, it } from "vitest";
import { runIdTokenPrune } from "./prune-id-tokens.job.ts";

// Run-it-twice (conventions rule 9): expired records and keys past their overlap go once; a live
// token's record and the signing key stay; the second pass deletes nothing.
const t = useTestDb();

describe("prune-id-tokens job", () => {
  it("deletes only what no verification can use, and a second pass changes nothing", async () => {
    const kek = kekFromBytes(randomBytes(32));
    const tenant = await seedTenant(t.db());
    await seedFrozenRun(t.db(), tenant, def(ONE_JOB));
    const session = await newSession(t.db(), tenant);
    const c = await claimJob(t.db(), TEST_CFG, { sessionId: session, claimRequestId: randomUUID() });
    if (c.kind !== "claimed") throw new Error("no claim");
    const mint = () =>
      mintIdToken(
        t.db(),
        { issuer: "https://kiln.test", kek },
        { jobId: c.ticket.jobId, attemptId: c.ticket.attemptId, epoch: 1, audience: "a" },
      );
    const old = await mint();
    const live = await mint();
    const r = await rotateIdTokenKey(t.db(), kek);
    await t.db().$executeRaw`
      UPDATE id_token SET issued_at = now() - interval '3 hours', expires_at = now() - interval '2 hours' WHERE jti = ${old.claims.jti}::uuid`;
    await t.db()
      .$executeRaw`UPDATE id_token_key SET verify_until = now() - interval '2 hours' WHERE kid = ${r.retired ?? ""}`;
    expect(await runIdTokenPrune(t.db())).toEqual({ tokens: 1, keys: 1 });
    expect(await runIdTokenPrune(t.db())).toEqual({ tokens: 0, keys: 0 });
    const left = await t.db().$queryRaw<{ jti: string }[]>`SELECT jti::text FROM id_token`;
    expect(left.map((x) => x.jti)).toEqual([live.claims.jti]);
    const keys = await t.db().$queryRaw<{ kid: string }[]>`SELECT kid FROM id_token_key`;
    expect(keys.map((k) => k.kid)).toEqual([r.kid]);
  });
});
