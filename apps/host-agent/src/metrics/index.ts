export {
  countCacheIntegrityFailure,
  countLocalEvictions,
  countMultipartRetry,
  observeImagePreparation,
  recordCacheRestore,
  recordCacheSave,
} from "./agent-metrics.ts";
export { serveAgentMetrics } from "./serve-metrics.ts";
