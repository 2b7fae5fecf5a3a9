// Build caches on the host (issue 8, docs/adr/0014-build-caches.md).
export { CacheTransfer, DEFAULT_CACHE_LIMITS, type CacheHostConfig } from "./cache-transfer.ts";
export { LocalCacheTier } from "./local-tier.ts";
export { packCache } from "./pack-cache.ts";
export { restoreEntry } from "./restore-cache.ts";
