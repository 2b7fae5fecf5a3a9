// Public API of the caches capability (issue 8, docs/adr/0014-build-caches.md).
export { DEFAULT_CACHE_SETTINGS, type CacheSettings, type CacheStore } from "./cache-context.ts";
export { grantCacheRestore, type RestoreGrant } from "./grant-restore.ts";
export { openCacheSave, UNTRUSTED_WRITE_MESSAGE, type OpenSaveRequest, type SaveSession } from "./open-save.ts";
export { finalizeCacheSave, type SaveResult } from "./finalize-save.ts";
export { recordCacheStats, type CacheStatsReport } from "./record-stats.ts";
export { evictCaches, type CacheEvictionReport } from "./evict-caches.ts";
export { runCacheFigures, orgCacheFigures, type JobCacheFigures, type OrgCacheFigures } from "./cache-figures.ts";
