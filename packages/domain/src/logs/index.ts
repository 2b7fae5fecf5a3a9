// Public API of the logs capability's pure rules (docs/adr/0006-logs.md).
export {
  LOG_STREAMS,
  MAX_LOG_CHUNK_BYTES,
  decideChunkBatch,
  type LogStream,
  type LogChunkIdentity,
  type LogPosition,
  type ChunkBatchDecision,
} from "./log-chunks.ts";
export {
  LOG_STATES,
  isTerminalLogState,
  terminalLogEvent,
  decideSeal,
  decideLogOnAttemptEnd,
  type LogState,
  type TerminalLogState,
  type LogSealDeclaration,
  type SealDecision,
} from "./log-state.ts";
export { encodeLogCursor, type LogCursor } from "./log-cursor.ts";
export { planLogStream, type LogStreamPlan } from "./log-stream-plan.ts";
export { LOG_CHUNKS_CONTENT_TYPE, encodeLogFrame, decodeLogFrame } from "./log-frame.ts";
export { SecretMasker, secretValuesFromEnv } from "./secret-masker.ts";
