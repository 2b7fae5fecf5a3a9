// The life of one attempt's log (docs/adr/0006-logs.md). A log is OPEN while its attempt may still
// append; it ends exactly once, in one of three terminal states:
//   sealed     the agent declared the end and every byte it captured was acknowledged;
//   truncated  sealed, but the agent dropped output past the per-attempt limit (counted);
//   gapped     the attempt ended without a seal: bytes after the last acknowledged chunk may be
//              missing. Never reported as complete.
import { DomainError } from "../shared/errors.ts";
import type { LogPosition, LogStream } from "./log-chunks.ts";

export const LOG_STATES = ["open", "sealed", "truncated", "gapped"] as const;
export type LogState = (typeof LOG_STATES)[number];
export type TerminalLogState = Exclude<LogState, "open">;

export function isTerminalLogState(s: LogState): s is TerminalLogState {
  return s !== "open";
}

/** The SSE event that ends a finished attempt's stream. */
export function terminalLogEvent(s: TerminalLogState): "log.sealed" | "log.truncated" | "log.gapped" {
  switch (s) {
    case "sealed":
      return "log.sealed";
    case "truncated":
      return "log.truncated";
    case "gapped":
      return "log.gapped";
  }
}

export interface LogSealDeclaration {
  /** The agent's count of chunks it cut (= the next sequence number). */
  nextSeq: number;
  /** Bytes the agent captured and kept, per stream (= the final offsets). */
  bytes: Record<LogStream, number>;
  /** Bytes the agent read and discarded past the limit, per stream. */
  dropped: Record<LogStream, number>;
}

export type SealDecision =
  | { kind: "seal"; to: "sealed" | "truncated" }
  /** The same seal again (a retry after a lost answer): answer as before, write nothing. */
  | { kind: "already"; state: "sealed" | "truncated" };

/**
 * A seal is accepted only when the journal holds everything the agent says it captured, so a
 * sealed log is complete by construction. Past the limit the log is `truncated`, never `sealed`.
 */
export function decideSeal(input: {
  state: LogState;
  position: LogPosition;
  dropped: Record<LogStream, number>;
  declared: LogSealDeclaration;
}): SealDecision {
  const { state, position, declared } = input;
  const sameFigures =
    position.nextSeq === declared.nextSeq &&
    position.committed.stdout === declared.bytes.stdout &&
    position.committed.stderr === declared.bytes.stderr;
  if (state !== "open") {
    const sameDrops =
      input.dropped.stdout === declared.dropped.stdout && input.dropped.stderr === declared.dropped.stderr;
    if (state !== "gapped" && sameFigures && sameDrops) return { kind: "already", state };
    throw new DomainError("LOG.ENDED", `the log has already ended (${state})`, { state });
  }
  if (!sameFigures) {
    throw new DomainError(
      "LOG.INCOMPLETE",
      "the journal does not hold everything declared; send the missing chunks first",
      {
        next_seq: position.nextSeq,
        committed: position.committed,
      },
    );
  }
  const truncated = declared.dropped.stdout > 0 || declared.dropped.stderr > 0;
  return { kind: "seal", to: truncated ? "truncated" : "sealed" };
}

/**
 * The attempt ended (completion, fencing, cancellation) while its log was still open: the agent
 * never sealed it, so whatever it had not yet sent is unknown. Returns the new state or null.
 */
export function decideLogOnAttemptEnd(state: LogState | null): "gapped" | null {
  return state === null || state === "open" ? "gapped" : null;
}
