import { describe, expect, it } from "vitest";
import { DomainError } from "../shared/errors.ts";
import { cacheModeProblem, cacheSymlinkProblem, parseCacheMemberName } from "./cache-manifest.ts";
import { checkCacheArchive, decideCacheBind, DEFAULT_CACHE_LIMITS, planCacheEviction } from "./cache-rules.ts";

describe("binding", () => {
  it("is first-writer-wins; different bytes are a conflict, never an overwrite", () => {
    expect(decideCacheBind(null, { sha256: "a" })).toBe("bound");
    expect(decideCacheBind({ sha256: "a" }, { sha256: "a" })).toBe("already_bound");
    expect(decideCacheBind({ sha256: "a" }, { sha256: "b" })).toBe("conflict");
  });

  it("refuses archives above the limits", () => {
    const ok = { sizeBytes: 1, unpackedBytes: 1, entryCount: 1 };
    expect(() => checkCacheArchive(DEFAULT_CACHE_LIMITS, ok)).not.toThrow();
    for (const bad of [
      { sizeBytes: DEFAULT_CACHE_LIMITS.maxEntryBytes + 1 },
      { unpackedBytes: DEFAULT_CACHE_LIMITS.maxUnpackedBytes + 1 },
      { entryCount: DEFAULT_CACHE_LIMITS.maxEntries + 1 },
    ]) {
      let code = null;
      try {
        checkCacheArchive(DEFAULT_CACHE_LIMITS, { ...ok, ...bad });
      } catch (e) {
        code = e instanceof DomainError ? e.code : null;
      }
      expect(code).toBe("CACHE.TOO_LARGE");
    }
  });
});

describe("eviction plan", () => {
  const day = 86_400_000;
  const now = 100 * day;
  it("evicts idle entries, then least recently used beyond each org's quota", () => {
    const plan = planCacheEviction(
      [
        { id: "old", orgId: "a", sizeBytes: 10, lastUsedAt: now - 8 * day },
        { id: "a1", orgId: "a", sizeBytes: 40, lastUsedAt: now - 3 * day },
        { id: "a2", orgId: "a", sizeBytes: 40, lastUsedAt: now - 2 * day },
        { id: "a3", orgId: "a", sizeBytes: 40, lastUsedAt: now - 1 * day },
        { id: "b1", orgId: "b", sizeBytes: 40, lastUsedAt: now - 3 * day },
      ],
      { nowMs: now, idleMs: 7 * day, quotaBytes: () => 100 },
    );
    expect(plan).toEqual({ idle: ["old"], overQuota: ["a1"] });
  });

  it("is stable for equal timestamps", () => {
    const e = [
      { id: "y", orgId: "a", sizeBytes: 10, lastUsedAt: 5 },
      { id: "x", orgId: "a", sizeBytes: 10, lastUsedAt: 5 },
    ];
    const opts = { nowMs: 10, idleMs: 100, quotaBytes: () => 10 };
    expect(planCacheEviction(e, opts).overQuota).toEqual(["x"]);
    expect(planCacheEviction([...e].reverse(), opts).overQuota).toEqual(["x"]);
  });
});

describe("archive members", () => {
  it("accepts members under a declared path index only", () => {
    expect(parseCacheMemberName("0/a/b", 2)).toEqual({ index: 0, rel: ["a", "b"] });
    expect(parseCacheMemberName("1/", 2)).toEqual({ index: 1, rel: [] });
    for (const bad of ["2/a", "/0/a", "0/../../x", "0//a", "0/./a", "x/a", "01/a", "0/a\0b"]) {
      expect(parseCacheMemberName(bad, 2), bad).toHaveProperty("problem");
    }
  });

  it("refuses symlinks that leave their cache path and modes with special bits", () => {
    expect(cacheSymlinkProblem(["a", "link"], "b")).toBeNull();
    expect(cacheSymlinkProblem(["a", "link"], "../b")).toBeNull();
    expect(cacheSymlinkProblem(["a", "link"], "../../b")).not.toBeNull();
    expect(cacheSymlinkProblem(["link"], "/etc/passwd")).not.toBeNull();
    expect(cacheSymlinkProblem(["link"], "a/../../b")).not.toBeNull();
    expect(cacheModeProblem(0o755)).toBeNull();
    expect(cacheModeProblem(0o4755)).not.toBeNull();
    expect(cacheModeProblem(0o2755)).not.toBeNull();
  });
});
