import { HeadObjectCommand } from "@aws-sdk/client-s3";
import { describe, expect, it } from "vitest";
import type { Db } from "@kiln/db";
import type { JobTicket } from "../../src/dispatch/claim-job.ts";
import { DEFAULT_CACHE_SETTINGS, type CacheStore } from "../../src/caches/cache-context.ts";
import { evictCaches } from "../../src/caches/evict-caches.ts";
import { finalizeCacheSave } from "../../src/caches/finalize-save.ts";
import { grantCacheRestore } from "../../src/caches/grant-restore.ts";
import { openCacheSave } from "../../src/caches/open-save.ts";
import { recordCacheStats } from "../../src/caches/record-stats.ts";
import { orgCacheFigures, runCacheFigures } from "../../src/caches/cache-figures.ts";
import { addMember } from "../../src/tenants/index.ts";
import { getOrgSettings } from "../../src/views/tenants/get-org-settings.ts";
import { resolveTenant } from "../../src/views/tenants/resolve-tenant.ts";
import { def, newSession, seedFrozenRun, seedTenant, useTestDb, type Tenant } from "../support.ts";
import { bytes, claim, claimsOf, expireLease, fetchBytes, publish, sha256, useS3 } from "../artifacts/support.ts";

const t = useTestDb();
const s3 = useS3();
const store = (over: Partial<CacheStore["settings"]> = {}): CacheStore => ({
  s3: s3.store().s3,
  bucket: s3.store().bucket,
  settings: { ...DEFAULT_CACHE_SETTINGS, ...over },
});

const DEPS = (kind = "dependencies", version = "deps-v1") => `version: 1
jobs:
  - name: build
    steps: [npm ci]
    cache:
      kind: ${kind}
      version: ${version}
      inputs: [package-lock.json]
      paths: [node_modules]
`;
const lock = (c: string) => [{ path: "package-lock.json", sha256: c.repeat(64) }];

async function runOne(
  db: Db,
  tenant: Tenant,
  yaml: string,
  trust: "trusted" | "untrusted" = "trusted",
  ref = "refs/heads/main",
): Promise<JobTicket> {
  // Untrusted work is placed on microVM hosts only (ADR 0022).
  const s = await newSession(db, tenant, 100, "host", trust === "untrusted" ? "microvm" : "process");
  await seedFrozenRun(db, tenant, def(yaml), trust, ref);
  const tk = await claim(db, s);
  if (!tk) throw new Error("nothing claimed");
  return tk;
}

/** The agent's save path: open, PUT the archive to the presigned URL, finalize. */
async function save(tk: JobTicket, inputs: ReturnType<typeof lock>, data: Buffer, putBody: Buffer = data) {
  const opened = await openCacheSave(t.db(), store(), claimsOf(tk), {
    inputs,
    sizeBytes: data.length,
    sha256: sha256(data),
    unpackedBytes: data.length * 2,
    entryCount: 3,
  });
  if (opened.state !== "upload") return opened;
  const r = await fetch(opened.url, { method: "PUT", body: new Uint8Array(putBody) });
  expect(r.status).toBe(200);
  return finalizeCacheSave(t.db(), store(), claimsOf(tk), opened.entryId);
}

describe("restore and save through the control plane", () => {
  it("misses, binds a trusted save, and hands the same bytes to the next run", async () => {
    const tenant = await seedTenant(t.db());
    const first = await runOne(t.db(), tenant, DEPS());
    expect(first.job.cache).toEqual({
      kind: "dependencies",
      version: "deps-v1",
      inputs: ["package-lock.json"],
      paths: ["node_modules"],
    });
    const miss = await grantCacheRestore(t.db(), store(), claimsOf(first), lock("a"));
    expect(miss.hit).toBe(false);
    const data = bytes(300_000, 1);
    const saved = await save(first, lock("a"), data);
    expect(saved).toMatchObject({ state: "bound", key: miss.key });

    const second = await runOne(t.db(), tenant, DEPS());
    const hit = await grantCacheRestore(t.db(), store(), claimsOf(second), lock("a"));
    expect(hit).toMatchObject({
      hit: true,
      exact: true,
      key: miss.key,
      sizeBytes: data.length,
      sha256: sha256(data),
      entryCount: 3,
    });
    if (!hit.hit) throw new Error("expected a hit");
    expect(sha256(await fetchBytes(hit.url))).toBe(sha256(data));

    // Dependencies fall back to the newest entry with the same prefix; a directory cache does not.
    const fallback = await grantCacheRestore(t.db(), store(), claimsOf(second), lock("b"));
    expect(fallback).toMatchObject({ hit: true, exact: false });
    const dir = await runOne(t.db(), tenant, DEPS("directory"));
    await save(dir, lock("a"), bytes(1000, 2));
    expect(await grantCacheRestore(t.db(), store(), claimsOf(dir), lock("b"))).toMatchObject({ hit: false });
    expect(await grantCacheRestore(t.db(), store(), claimsOf(dir), lock("a"))).toMatchObject({
      hit: true,
      exact: true,
    });

    // Same version string, other repository (other org here): never a match.
    const stranger = await runOne(t.db(), await seedTenant(t.db()), DEPS());
    expect(await grantCacheRestore(t.db(), store(), claimsOf(stranger), lock("a"))).toMatchObject({ hit: false });
  });

  it("refuses an untrusted write with a named reason, while letting it read trusted entries", async () => {
    const tenant = await seedTenant(t.db());
    const trusted = await runOne(t.db(), tenant, DEPS());
    const data = bytes(5000, 3);
    await save(trusted, lock("a"), data);

    const fork = await runOne(t.db(), tenant, DEPS(), "untrusted");
    const read = await grantCacheRestore(t.db(), store(), claimsOf(fork), lock("a"));
    expect(read).toMatchObject({ hit: true, sha256: sha256(data) });
    await expect(save(fork, lock("a"), bytes(5000, 4))).rejects.toMatchObject({
      code: "CACHE.WRITE_REFUSED",
      message: "cache write refused: untrusted run",
      details: { reason: "untrusted_run" },
    });
  });

  it("a fork PR's attempted write never reaches a default-branch run asking for the same key", async () => {
    const tenant = await seedTenant(t.db());
    const fork = await runOne(t.db(), tenant, DEPS(), "untrusted");
    const poison = bytes(4000, 66);
    await expect(save(fork, lock("f"), poison)).rejects.toMatchObject({ code: "CACHE.WRITE_REFUSED" });
    const n = await t.db().$queryRaw<
      { n: bigint }[]
    >`SELECT count(*) AS n FROM cache_entry WHERE org_id = ${tenant.orgId}::uuid`;
    expect(Number(n[0]?.n)).toBe(0);

    const main = await runOne(t.db(), tenant, DEPS());
    expect(await grantCacheRestore(t.db(), store(), claimsOf(main), lock("f"))).toMatchObject({ hit: false });
    const own = bytes(4000, 7);
    await save(main, lock("f"), own);
    const again = await runOne(t.db(), tenant, DEPS());
    const hit = await grantCacheRestore(t.db(), store(), claimsOf(again), lock("f"));
    if (!hit.hit) throw new Error("expected a hit");
    expect(hit.sha256).toBe(sha256(own));
    expect(hit.sha256).not.toBe(sha256(poison));
  });

  it("a run reads its own ref's entry first, then the default branch's, never another branch's", async () => {
    const tenant = await seedTenant(t.db());
    const onMain = bytes(3000, 21);
    await save(await runOne(t.db(), tenant, DEPS()), lock("a"), onMain);
    const onOther = bytes(3000, 22);
    const other = await runOne(t.db(), tenant, DEPS(), "trusted", "refs/heads/other");
    // Its own ref had nothing: it restored main's entry, and its save binds under its own ref.
    expect(await grantCacheRestore(t.db(), store(), claimsOf(other), lock("a"))).toMatchObject({
      hit: true,
      sha256: sha256(onMain),
    });
    expect(await save(other, lock("a"), onOther)).toMatchObject({ state: "bound" });

    // A feature branch: main's entry (never other's), exact before any prefix fallback.
    const feature = await runOne(t.db(), tenant, DEPS(), "trusted", "refs/heads/feature");
    expect(await grantCacheRestore(t.db(), store(), claimsOf(feature), lock("a"))).toMatchObject({
      hit: true,
      exact: true,
      sha256: sha256(onMain),
    });
    const onFeature = bytes(3000, 23);
    expect(await save(feature, lock("a"), onFeature)).toMatchObject({ state: "bound" });
    // Now its own ref's entry comes first.
    const feature2 = await runOne(t.db(), tenant, DEPS(), "trusted", "refs/heads/feature");
    expect(await grantCacheRestore(t.db(), store(), claimsOf(feature2), lock("a"))).toMatchObject({
      hit: true,
      exact: true,
      sha256: sha256(onFeature),
    });
    // Main never sees what a branch bound, and a third branch sees only main's.
    const main2 = await runOne(t.db(), tenant, DEPS());
    expect(await grantCacheRestore(t.db(), store(), claimsOf(main2), lock("a"))).toMatchObject({
      sha256: sha256(onMain),
    });
    const third = await runOne(t.db(), tenant, DEPS(), "trusted", "refs/heads/third");
    expect(await grantCacheRestore(t.db(), store(), claimsOf(third), lock("a"))).toMatchObject({
      sha256: sha256(onMain),
    });
    // Prefix fallback follows the same order and never crosses to another branch either.
    await t.db()
      .$executeRaw`DELETE FROM cache_binding WHERE org_id = ${tenant.orgId}::uuid AND ref = 'refs/heads/main'`;
    expect(await grantCacheRestore(t.db(), store(), claimsOf(third), lock("b"))).toMatchObject({ hit: false });
    expect(await grantCacheRestore(t.db(), store(), claimsOf(feature2), lock("b"))).toMatchObject({
      hit: true,
      exact: false,
      sha256: sha256(onFeature),
    });
    const refs = await t.db().$queryRaw<{ ref: string }[]>`
      SELECT ref FROM cache_entry WHERE org_id = ${tenant.orgId}::uuid AND state = 'bound' ORDER BY ref`;
    expect(refs.map((r) => r.ref)).toEqual(["refs/heads/feature", "refs/heads/main", "refs/heads/other"]);
  });

  it("a pull request whose head branch is named main writes under refs/pull/<n>/head, never under main (issue 28)", async () => {
    const tenant = await seedTenant(t.db());
    const onMain = bytes(3000, 31);
    await save(await runOne(t.db(), tenant, DEPS()), lock("a"), onMain);
    // A member's PR from a branch called `main`: admission stores the PR's own ref (the head
    // branch is kept apart), so its cache scope is that ref, not refs/heads/main.
    const pr = await runOne(t.db(), tenant, DEPS(), "trusted", "refs/pull/5/head");
    expect(await grantCacheRestore(t.db(), store(), claimsOf(pr), lock("a"))).toMatchObject({
      hit: true,
      sha256: sha256(onMain),
    });
    const fromPr = bytes(3000, 32);
    expect(await save(pr, lock("a"), fromPr)).toMatchObject({ state: "bound" });
    const main2 = await runOne(t.db(), tenant, DEPS());
    expect(await grantCacheRestore(t.db(), store(), claimsOf(main2), lock("a"))).toMatchObject({
      sha256: sha256(onMain),
    });
    const refs = await t.db().$queryRaw<{ ref: string }[]>`
      SELECT ref FROM cache_entry WHERE org_id = ${tenant.orgId}::uuid AND state = 'bound' ORDER BY ref`;
    expect(refs.map((r) => r.ref)).toEqual(["refs/heads/main", "refs/pull/5/head"]);
  });

  it("refuses every cache call from a stale epoch", async () => {
    const tenant = await seedTenant(t.db());
    const tk = await runOne(t.db(), tenant, DEPS());
    const data = bytes(1000, 5);
    const opened = await openCacheSave(t.db(), store(), claimsOf(tk), {
      inputs: lock("a"),
      sizeBytes: data.length,
      sha256: sha256(data),
      unpackedBytes: 1,
      entryCount: 1,
    });
    if (opened.state !== "upload") throw new Error("expected an upload");
    await fetch(opened.url, { method: "PUT", body: new Uint8Array(data) });
    const stale = { ...claimsOf(tk), epoch: tk.epoch + 1 };
    await expect(grantCacheRestore(t.db(), store(), stale, lock("a"))).rejects.toMatchObject({
      code: "ATTEMPT.STALE_EPOCH",
    });
    await expect(
      openCacheSave(t.db(), store(), stale, {
        inputs: lock("a"),
        sizeBytes: 1,
        sha256: "a".repeat(64),
        unpackedBytes: 1,
        entryCount: 1,
      }),
    ).rejects.toMatchObject({ code: "ATTEMPT.STALE_EPOCH" });
    await expect(finalizeCacheSave(t.db(), store(), stale, opened.entryId)).rejects.toMatchObject({
      code: "ATTEMPT.STALE_EPOCH",
    });
    await expect(
      recordCacheStats(t.db(), stale, { save: { result: "saved", reason: null, bytes: 1, ms: 1 } }),
    ).rejects.toMatchObject({ code: "ATTEMPT.STALE_EPOCH" });
    await expireLease(t.db(), tk.attemptId);
    await expect(finalizeCacheSave(t.db(), store(), claimsOf(tk), opened.entryId)).rejects.toMatchObject({
      code: "ATTEMPT.LEASE_EXPIRED",
    });
    const bound = await t.db().$queryRaw<
      { n: bigint }[]
    >`SELECT count(*) AS n FROM cache_binding WHERE org_id = ${tenant.orgId}::uuid`;
    expect(Number(bound[0]?.n)).toBe(0);
  });

  it("refuses an archive larger than the org's whole quota", async () => {
    const tenant = await seedTenant(t.db());
    await t.db().$executeRaw`UPDATE org SET cache_quota_bytes = 1000 WHERE id = ${tenant.orgId}::uuid`;
    const tk = await runOne(t.db(), tenant, DEPS());
    await expect(save(tk, lock("a"), bytes(1001, 1))).rejects.toMatchObject({ code: "CACHE.TOO_LARGE" });
    expect(await save(tk, lock("b"), bytes(1000, 1))).toMatchObject({ state: "bound" });
  });

  it("never binds bytes that differ from what was declared", async () => {
    const tenant = await seedTenant(t.db());
    const tk = await runOne(t.db(), tenant, DEPS());
    const declared = bytes(2000, 8);
    const tampered = Buffer.from(declared);
    tampered[10] = (tampered[10] ?? 0) ^ 0xff;
    await expect(save(tk, lock("a"), declared, tampered)).rejects.toMatchObject({ code: "CACHE.VERIFICATION_FAILED" });
    const other = await runOne(t.db(), tenant, DEPS());
    expect(await grantCacheRestore(t.db(), store(), claimsOf(other), lock("a"))).toMatchObject({ hit: false });
  });

  it("first writer wins; a second writer with other bytes is a recorded conflict, not an overwrite", async () => {
    const tenant = await seedTenant(t.db());
    const a = await runOne(t.db(), tenant, DEPS());
    const b = await runOne(t.db(), tenant, DEPS());
    const first = bytes(3000, 10);
    const second = bytes(3000, 11);
    // Both open before either binds: the race is decided at finalize.
    const oa = await openCacheSave(t.db(), store(), claimsOf(a), {
      inputs: lock("c"),
      sizeBytes: first.length,
      sha256: sha256(first),
      unpackedBytes: 1,
      entryCount: 1,
    });
    const ob = await openCacheSave(t.db(), store(), claimsOf(b), {
      inputs: lock("c"),
      sizeBytes: second.length,
      sha256: sha256(second),
      unpackedBytes: 1,
      entryCount: 1,
    });
    if (oa.state !== "upload" || ob.state !== "upload") throw new Error("expected two uploads");
    await fetch(oa.url, { method: "PUT", body: new Uint8Array(first) });
    await fetch(ob.url, { method: "PUT", body: new Uint8Array(second) });
    expect(await finalizeCacheSave(t.db(), store(), claimsOf(a), oa.entryId)).toMatchObject({ state: "bound" });
    expect(await finalizeCacheSave(t.db(), store(), claimsOf(b), ob.entryId)).toMatchObject({ state: "conflict" });
    // Asking again after a lost answer gives the same answer.
    expect(await finalizeCacheSave(t.db(), store(), claimsOf(b), ob.entryId)).toMatchObject({ state: "conflict" });
    const conflicts = await t.db().$queryRaw<{ bound_sha256: string; rejected_sha256: string }[]>`
      SELECT bound_sha256, rejected_sha256 FROM cache_conflict WHERE org_id = ${tenant.orgId}::uuid`;
    expect(conflicts).toEqual([{ bound_sha256: sha256(first), rejected_sha256: sha256(second) }]);
    // A later writer with other bytes is told at open and never uploads.
    const c = await runOne(t.db(), tenant, DEPS());
    expect(await save(c, lock("c"), bytes(3000, 12))).toMatchObject({ state: "conflict" });
    const d = await runOne(t.db(), tenant, DEPS());
    expect(await save(d, lock("c"), first)).toMatchObject({ state: "already_bound" });
    const reader = await runOne(t.db(), tenant, DEPS());
    expect(await grantCacheRestore(t.db(), store(), claimsOf(reader), lock("c"))).toMatchObject({
      hit: true,
      sha256: sha256(first),
    });
    // Shown to the org's admins (settings page), not to members.
    const scopeOf = async (login: string, role: "admin" | "member") => {
      const { userId } = await addMember(t.db(), { orgSlug: tenant.slug, login, role });
      return resolveTenant(t.db(), { userId, login, orgSlug: tenant.slug, roles: [role] });
    };
    const adminView = await getOrgSettings(t.db(), await scopeOf(`${tenant.slug}-boss`, "admin"));
    expect(adminView.cache_conflicts).toEqual([
      expect.objectContaining({
        repo: tenant.repoName,
        bound_sha256: sha256(first),
        rejected_sha256: sha256(bytes(3000, 12)),
        run_id: c.runId,
      }),
      expect.objectContaining({
        repo: tenant.repoName,
        bound_sha256: sha256(first),
        rejected_sha256: sha256(second),
        run_id: b.runId,
      }),
    ]);
    expect((await getOrgSettings(t.db(), await scopeOf(`${tenant.slug}-dev`, "member"))).cache_conflicts).toEqual([]);
    const events = await t.db().$queryRaw<{ to_state: string; reason: string }[]>`
      SELECT to_state, reason FROM transition_event WHERE org_id = ${tenant.orgId}::uuid AND entity = 'cache' ORDER BY id`;
    expect(events.map((e) => `${e.to_state}:${e.reason}`)).toEqual([
      "uploading:save_opened",
      "uploading:save_opened",
      "bound:verified",
      "abandoned:conflict",
      "abandoned:conflict",
    ]);
  });
});

describe("figures", () => {
  it("keeps per-job stats from the current epoch and aggregates hit rate per trust class", async () => {
    const tenant = await seedTenant(t.db());
    const tk = await runOne(t.db(), tenant, DEPS());
    await recordCacheStats(t.db(), claimsOf(tk), {
      restore: { result: "hit", tier: "local", exact: true, reason: null, bytes: 100, ms: 5 },
    });
    await recordCacheStats(t.db(), claimsOf(tk), {
      save: { result: "refused", reason: "cache write refused: untrusted run", bytes: 0, ms: 1 },
    });
    const figures = await runCacheFigures(t.db(), { orgId: tenant.orgId, runId: tk.runId });
    expect(figures).toEqual([
      {
        jobId: tk.jobId,
        restoreResult: "hit",
        restoreTier: "local",
        restoreExact: true,
        restoreReason: null,
        bytesRestored: 100,
        restoreMs: 5,
        saveResult: "refused",
        saveReason: "cache write refused: untrusted run",
        bytesSaved: 0,
        saveMs: 1,
      },
    ]);
    expect(await runCacheFigures(t.db(), { orgId: (await seedTenant(t.db())).orgId, runId: tk.runId })).toEqual([]);
    const org = await orgCacheFigures(t.db(), { orgId: tenant.orgId, sinceDays: 30 });
    expect(org).toEqual([{ trustClass: "trusted", restores: 1, hits: 1, hitRate: 1, estimatedSavedMs: 0 }]);
  });
});

describe("eviction", () => {
  it("evicts idle entries and LRU beyond the quota, deletes their objects, never an artifact, and is idempotent", async () => {
    // Other tests' leftovers (abandoned conflicts) are collected first, so the counts below are this test's.
    await evictCaches(t.db(), store());
    const tenant = await seedTenant(t.db());
    const ARTIFACT_JOB = `version: 1
jobs:
  - name: compile
    steps: [make]
    cache: {kind: dependencies, version: v1, inputs: [package-lock.json], paths: [node_modules]}
    artifacts:
      publish:
        - name: app
          path: app.jar
`;
    const tk = await runOne(t.db(), tenant, ARTIFACT_JOB);
    const genId = await publish(t.db(), s3.store(), tk, "app", bytes(1000, 1));
    const ids: string[] = [];
    for (const c of ["1", "2", "3"]) {
      const r = await save(tk, lock(c), bytes(1000, Number(c)));
      if (!("entryId" in r)) throw new Error("expected an entry");
      ids.push(r.entryId);
    }
    // Entry 1 idle for 8 days; entry 2 older than 3; quota fits one entry.
    await t.db()
      .$executeRaw`UPDATE cache_entry SET last_used_at = now() - interval '8 days' WHERE id = ${ids[0]}::uuid`;
    await t.db()
      .$executeRaw`UPDATE cache_entry SET last_used_at = now() - interval '2 days' WHERE id = ${ids[1]}::uuid`;
    await t.db().$executeRaw`UPDATE org SET cache_quota_bytes = 1500 WHERE id = ${tenant.orgId}::uuid`;
    const keys = await t.db().$queryRaw<
      { object_key: string }[]
    >`SELECT object_key FROM cache_entry WHERE id = ANY(${ids}::uuid[]) ORDER BY created_at`;

    const first = await evictCaches(t.db(), store());
    expect(first).toMatchObject({ evictedIdle: 1, evictedOverQuota: 1, objectsDeleted: 2 });
    const states = await t.db().$queryRaw<
      { id: string; state: string }[]
    >`SELECT id::text, state FROM cache_entry WHERE id = ANY(${ids}::uuid[])`;
    expect(Object.fromEntries(states.map((s) => [s.id, s.state]))).toEqual({
      [ids[0]!]: "evicted",
      [ids[1]!]: "evicted",
      [ids[2]!]: "bound",
    });
    const exists = async (key: string) =>
      s3
        .store()
        .s3.send(new HeadObjectCommand({ Bucket: "kiln", Key: key }))
        .then(
          () => true,
          () => false,
        );
    expect(await exists(keys[0]!.object_key)).toBe(false);
    expect(await exists(keys[2]!.object_key)).toBe(true);
    const art = await t.db().$queryRaw<
      { object_key: string; state: string }[]
    >`SELECT object_key, state FROM artifact_generation WHERE id = ${genId}::uuid`;
    expect(art[0]?.state).toBe("sealed");
    expect(await exists(art[0]!.object_key)).toBe(true);
    // The evicted key is free again: a restore misses and a new writer can bind it.
    const reader = await runOne(t.db(), tenant, DEPS("dependencies", "v9"));
    expect(await grantCacheRestore(t.db(), store(), claimsOf(reader), lock("1"))).toMatchObject({ hit: false });

    expect(await evictCaches(t.db(), store())).toEqual({
      evictedIdle: 0,
      evictedOverQuota: 0,
      abandonedUploads: 0,
      objectsDeleted: 0,
    });
  });

  it("abandons uploads that were never finished and deletes whatever they stored", async () => {
    const tenant = await seedTenant(t.db());
    const tk = await runOne(t.db(), tenant, DEPS());
    const data = bytes(1000, 1);
    const opened = await openCacheSave(t.db(), store(), claimsOf(tk), {
      inputs: lock("e"),
      sizeBytes: data.length,
      sha256: sha256(data),
      unpackedBytes: 1,
      entryCount: 1,
    });
    if (opened.state !== "upload") throw new Error("expected an upload");
    await fetch(opened.url, { method: "PUT", body: new Uint8Array(data) });
    const key = `caches/${tenant.orgId}/${tenant.repoId}/${opened.entryId}.tar.gz`;
    expect((await evictCaches(t.db(), store({ abandonUploadsAfterMs: 0 }))).abandonedUploads).toBeGreaterThanOrEqual(1);
    const row = await t.db().$queryRaw<{ state: string; abandon_reason: string; deleted: boolean }[]>`
      SELECT state, abandon_reason, object_deleted_at IS NOT NULL AS deleted FROM cache_entry WHERE id = ${opened.entryId}::uuid`;
    expect(row[0]).toEqual({ state: "abandoned", abandon_reason: "upload_expired", deleted: true });
    expect(
      await s3
        .store()
        .s3.send(new HeadObjectCommand({ Bucket: "kiln", Key: key }))
        .then(
          () => true,
          () => false,
        ),
    ).toBe(false);
    expect(await evictCaches(t.db(), store({ abandonUploadsAfterMs: 0 }))).toMatchObject({
      abandonedUploads: 0,
      objectsDeleted: 0,
    });
  });
});
