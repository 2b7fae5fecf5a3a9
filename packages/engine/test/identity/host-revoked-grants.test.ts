import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { grantDownload } from "../../src/artifacts/grant-download.ts";
import { DEFAULT_CACHE_SETTINGS } from "../../src/caches/cache-context.ts";
import { grantCacheRestore } from "../../src/caches/grant-restore.ts";
import { revokeAgentToken } from "../../src/identity/agent-tokens.ts";
import { deliverSecrets, generateKekText, KekSource, setSecret, targetById } from "../../src/secrets/index.ts";
import { claim, claimsOf, useS3 } from "../artifacts/support.ts";
import { def, newSession, seedFrozenRun, seedTenant, useTestDb } from "../support.ts";

// Issue 28: ID-token minting refused an attempt whose host credential was revoked, but the secret
// broker and the artifact and cache grants did not: between the revocation and the fence (up to a
// lease) a revoked host could still collect secrets and download URLs. One check now serves all.
const t = useTestDb();
const s3 = useS3();
const dir = mkdtempSync(path.join(tmpdir(), "kiln-revoked-kek-"));
writeFileSync(path.join(dir, "kek"), generateKekText(), { mode: 0o600 });
const keks = new KekSource(path.join(dir, "kek"));

const WORKFLOW = `version: 1
jobs:
  - name: use
    secrets: [TOKEN]
    steps: [echo hi]
`;

async function codeOf(p: Promise<unknown>): Promise<string | null> {
  try {
    await p;
    return null;
  } catch (e) {
    return (e as { code?: string }).code ?? String(e);
  }
}

describe("a revoked host gets nothing more for its running attempt", () => {
  it("the secret broker, the artifact grant and the cache grant refuse it with ATTEMPT.HOST_REVOKED", async () => {
    const tenant = await seedTenant(t.db());
    await setSecret(t.db(), keks, {
      target: await targetById(t.db(), tenant.orgId, null),
      name: "TOKEN",
      value: "s3cr3t-value",
      actor: "cli:ops",
    });
    await seedFrozenRun(t.db(), tenant, def(WORKFLOW));
    const ticket = await claim(t.db(), await newSession(t.db(), tenant));
    if (!ticket) throw new Error("nothing claimed");
    const claims = claimsOf(ticket);
    const cacheStore = { s3: s3.store().s3, bucket: s3.store().bucket, settings: DEFAULT_CACHE_SETTINGS };
    const download = () => grantDownload(t.db(), s3.store(), claims, { fromJob: "build", name: "app" });
    const restore = () => grantCacheRestore(t.db(), cacheStore, claims, []);

    // While the host is in good standing the attempt is current: secrets flow, and the grants
    // answer about the request itself (this job declares no such artifact or cache).
    expect((await deliverSecrets(t.db(), keks, claims, { epoch: ticket.epoch })).delivered).toEqual([
      { name: "TOKEN", version: 1, value: "s3cr3t-value" },
    ]);
    const before = [await codeOf(download()), await codeOf(restore())];
    expect(before).not.toContain("ATTEMPT.HOST_REVOKED");
    expect(before).not.toContain(null);

    await revokeAgentToken(t.db(), { id: tenant.agentTokenId });
    const reads = async () =>
      Number(
        (
          await t.db().$queryRaw<{ n: bigint }[]>`
            SELECT count(*) AS n FROM audit_event WHERE org_id = ${tenant.orgId}::uuid AND kind = 'secret.read'`
        )[0]?.n,
      );
    const readsBefore = await reads();
    expect(await codeOf(deliverSecrets(t.db(), keks, claims, { epoch: ticket.epoch }))).toBe("ATTEMPT.HOST_REVOKED");
    expect(await codeOf(download())).toBe("ATTEMPT.HOST_REVOKED");
    expect(await codeOf(restore())).toBe("ATTEMPT.HOST_REVOKED");
    // Nothing left, so nothing was recorded as read.
    expect(await reads()).toBe(readsBefore);
  });
});
