import { describe, expect, it } from "vitest";
import { DEFAULT_CACHE_SETTINGS, finalizeCacheSave, openCacheSave } from "@kiln/engine";
import {
  bytes,
  claim,
  claimsOf,
  def,
  newSession,
  seedFrozenRun,
  seedTenant,
  sha256,
  useS3,
  useTestDb,
} from "@kiln/engine/testing";
import { runCacheEviction } from "./evict-caches.job.ts";

// Run-it-twice (conventions rule 9): the second pass finds nothing to do and changes nothing.
const t = useTestDb();
const s3 = useS3();

const WORKFLOW = `version: 1
jobs:
  - name: build
    steps: [npm ci]
    cache: {kind: dependencies, version: v1, inputs: [package-lock.json], paths: [node_modules]}
`;

describe("evict-caches job", () => {
  it("evicts an idle entry and deletes its object once; running it again is a no-op", async () => {
    const tenant = await seedTenant(t.db());
    await seedFrozenRun(t.db(), tenant, def(WORKFLOW));
    const tk = (await claim(t.db(), await newSession(t.db(), tenant)))!;
    const store = { s3: s3.store().s3, bucket: s3.store().bucket, settings: DEFAULT_CACHE_SETTINGS };
    const data = bytes(2000, 1);
    const opened = await openCacheSave(t.db(), store, claimsOf(tk), {
      inputs: [{ path: "package-lock.json", sha256: "a".repeat(64) }],
      sizeBytes: data.length,
      sha256: sha256(data),
      unpackedBytes: 1,
      entryCount: 1,
    });
    if (opened.state !== "upload") throw new Error("expected an upload");
    await fetch(opened.url, { method: "PUT", body: new Uint8Array(data) });
    await finalizeCacheSave(t.db(), store, claimsOf(tk), opened.entryId);
    await t.db()
      .$executeRaw`UPDATE cache_entry SET last_used_at = now() - interval '8 days' WHERE id = ${opened.entryId}::uuid`;

    const snapshot = async () => t.db().$queryRaw<{ state: string; deleted: boolean; events: bigint }[]>`
      SELECT e.state, e.object_deleted_at IS NOT NULL AS deleted,
             (SELECT count(*) FROM transition_event WHERE entity = 'cache' AND data->>'entry_id' = e.id::text) AS events
      FROM cache_entry e WHERE e.id = ${opened.entryId}::uuid`;
    expect(await runCacheEviction(t.db(), store)).toMatchObject({ evictedIdle: 1, objectsDeleted: 1 });
    const after = await snapshot();
    expect(after).toEqual([{ state: "evicted", deleted: true, events: 3n }]);
    expect(await runCacheEviction(t.db(), store)).toEqual({
      evictedIdle: 0,
      evictedOverQuota: 0,
      abandonedUploads: 0,
      objectsDeleted: 0,
    });
    expect(await snapshot()).toEqual(after);
  });
});
