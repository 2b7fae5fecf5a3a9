import { DEFAULT_RETENTION_WINDOWS, type RetentionWindows } from "@kiln/domain";

// Knobs of the log pipeline. Apps map them from env with logConfigFromEnv (config/engine-env.ts).
export interface LogConfig {
  /** Per-attempt log size limit (stdout + stderr); the agent truncates at the same bound. */
  maxBytesPerAttempt: number;
  /** Journal budget: bytes acknowledged but not yet archived, across all attempts. Past it,
   * ingest answers 503 LOG.JOURNAL_FULL with Retry-After instead of evicting anything. */
  journalMaxBytes: number;
  /** The archiver cuts segments of about this size, and archives a still-open log once this much
   * of it sits in the journal. */
  segmentTargetBytes: number;
  /** How long an archiver owns one attempt before another may take over. */
  archiveLeaseMs: number;
  /** Platform retention windows stamped on archived segments (issue 21); default the seed's. */
  retention?: RetentionWindows;
}

export const DEFAULT_LOG_CONFIG: LogConfig = {
  maxBytesPerAttempt: 64 * 1024 * 1024,
  journalMaxBytes: 4 * 1024 * 1024 * 1024,
  segmentTargetBytes: 8 * 1024 * 1024,
  archiveLeaseMs: 60_000,
  retention: DEFAULT_RETENTION_WINDOWS,
};
