import type { ControlClient, JobTicket } from "../control-client.ts";
import type { Logger } from "@kiln/logger";
import type { CallFailure } from "../artifacts/index.ts";
import type { LocalCacheTier } from "./local-tier.ts";

export interface CacheLimits {
  /** Unpacked bytes and entries one restore or save may reach (decompression-bomb guard). */
  maxBytes: number;
  maxEntries: number;
  /** A restore slower than this is abandoned and counts as a miss. */
  timeoutMs: number;
}

export interface CacheContext {
  client: ControlClient;
  ticket: JobTicket;
  log: Logger;
  signal: AbortSignal;
  workspaceDir: string;
  /** Agent-owned staging on the workspace's filesystem: restored trees are renamed into place. */
  scratchDir: string;
  localTier: LocalCacheTier | null;
  limits: CacheLimits;
  /** The values delivered to this job (issue 16): an archive containing one is never saved. */
  secretValues: readonly string[];
}

export interface InputDigest {
  path: string;
  sha256: string | null;
}

/** Not a miss: the attempt itself was interrupted or fenced, and the attempt decides what follows. */
export type CacheFailure = { failure: Exclude<CallFailure, { kind: "error" }> };
