// Public API of the logs capability (docs/adr/0006-logs.md).
export { DEFAULT_LOG_CONFIG, type LogConfig } from "./log-config.ts";
export type { SqlPool, SqlClient } from "../shared/sql-pool.ts";
export { appendLogChunks, type IncomingChunk, type AppendResult, type LogWriter } from "./append-log-chunks.ts";
export { sealLog } from "./seal-log.ts";
export { endUnsealedLog, type LogOwner } from "./log-transitions.ts";
export { authorizeLogRead, type LogReadGrant } from "./authorize-log-read.ts";
export { assertLogRetained, loadLogHead, LogHeadCache, type LogHead } from "./log-head.ts";
export { readLogChunks, readStreamBytes } from "./read-log-chunks.ts";
export { s3LogStore, type LogObjectStore } from "./log-object-store.ts";
export { LogArchiveReader, type LogChunkRecord } from "./log-segments.ts";
export { archiveLogs, type ArchiveReport } from "./archive-logs.ts";
export {
  LogHub,
  LogPublisher,
  logChannel,
  type LiveLogMessage,
  type LiveChunk,
  type PublishedLogMessage,
} from "./log-fanout.ts";
export { openJobLog, type LogFollowerDeps, type FollowRequest } from "./log-follower.ts";
