// Binding, conflict and eviction rules for cache entries. Pure: the engine loads, decides, persists.
import { DomainError } from "../shared/errors.ts";

export const CACHE_ENTRY_STATES = ["uploading", "bound", "abandoned", "evicted"] as const;
export type CacheEntryState = (typeof CACHE_ENTRY_STATES)[number];

/** What an agent reports about one cache step (cache_stat rows; the agent's wire schema uses these). */
export const CACHE_RESTORE_RESULTS = ["hit", "miss"] as const;
export const CACHE_RESTORE_TIERS = ["local", "remote"] as const;
export const CACHE_SAVE_RESULTS = ["saved", "already_bound", "conflict", "refused", "skipped", "failed"] as const;

export type CacheBindOutcome = "bound" | "already_bound" | "conflict";

/**
 * First writer wins. A second writer with the same digest is a harmless duplicate; one with
 * different bytes means missing inputs, non-determinism or corruption: a signal for admins, never
 * an overwrite (readers may be restoring the first entry right now).
 */
export function decideCacheBind(existing: { sha256: string } | null, candidate: { sha256: string }): CacheBindOutcome {
  if (!existing) return "bound";
  return existing.sha256 === candidate.sha256 ? "already_bound" : "conflict";
}

export interface CacheLimits {
  /** Largest archive one entry may have (compressed bytes, what is stored). */
  maxEntryBytes: number;
  /** Largest unpacked size and entry count an archive may declare; the agent enforces both again. */
  maxUnpackedBytes: number;
  maxEntries: number;
}

export const DEFAULT_CACHE_LIMITS: CacheLimits = {
  maxEntryBytes: 5 * 1024 ** 3,
  maxUnpackedBytes: 10 * 1024 ** 3,
  maxEntries: 1_000_000,
};

export function checkCacheArchive(
  limits: CacheLimits,
  a: { sizeBytes: number; unpackedBytes: number; entryCount: number },
): void {
  if (a.sizeBytes > limits.maxEntryBytes)
    throw new DomainError(
      "CACHE.TOO_LARGE",
      `cache archive is ${a.sizeBytes} bytes; the limit is ${limits.maxEntryBytes}`,
    );
  if (a.unpackedBytes > limits.maxUnpackedBytes) {
    throw new DomainError(
      "CACHE.TOO_LARGE",
      `cache unpacks to ${a.unpackedBytes} bytes; the limit is ${limits.maxUnpackedBytes}`,
    );
  }
  if (a.entryCount > limits.maxEntries)
    throw new DomainError("CACHE.TOO_LARGE", `cache has ${a.entryCount} entries; the limit is ${limits.maxEntries}`);
}

/** Fresh per upload: a key is never reused, so a stale presigned URL can only reach its own blob. */
export function cacheObjectKey(e: { orgId: string; repoId: string; entryId: string }): string {
  return `caches/${e.orgId}/${e.repoId}/${e.entryId}.tar.gz`;
}

export interface EvictionCandidate {
  id: string;
  orgId: string;
  sizeBytes: number;
  lastUsedAt: number;
}

export interface EvictionPlan {
  idle: string[];
  overQuota: string[];
}

/**
 * Which bound entries to evict: every entry idle longer than idleMs, then per org the least
 * recently used until the org's remaining bytes fit its quota. Ties break on id so two passes over
 * the same rows agree (the worker is retried by pg-boss).
 */
export function planCacheEviction(
  entries: readonly EvictionCandidate[],
  opts: { nowMs: number; idleMs: number; quotaBytes: (orgId: string) => number },
): EvictionPlan {
  const idle: string[] = [];
  const byOrg = new Map<string, EvictionCandidate[]>();
  for (const e of entries) {
    if (opts.nowMs - e.lastUsedAt > opts.idleMs) {
      idle.push(e.id);
      continue;
    }
    const list = byOrg.get(e.orgId) ?? [];
    list.push(e);
    byOrg.set(e.orgId, list);
  }
  const overQuota: string[] = [];
  for (const [orgId, list] of byOrg) {
    let total = list.reduce((s, e) => s + e.sizeBytes, 0);
    const quota = opts.quotaBytes(orgId);
    list.sort((a, b) => a.lastUsedAt - b.lastUsedAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    for (const e of list) {
      if (total <= quota) break;
      overQuota.push(e.id);
      total -= e.sizeBytes;
    }
  }
  return { idle: idle.sort(), overQuota };
}
