// What a (re)connecting SSE client gets, decided from its Last-Event-ID, an optional
// ?attempt=<epoch> pin and the job's attempts. Pure, so every branch is tested without a server.
import { DomainError } from "../shared/errors.ts";
import { decodeLogCursor } from "./log-cursor.ts";

export type LogStreamPlan =
  /** Stream attempt `epoch` from chunk `fromSeq`; `cursorRejected` asks for an explicit notice. */
  | { kind: "stream"; epoch: number; fromSeq: number; cursorRejected: boolean }
  /** Nothing to send yet (job queued, or a retry is pending): keep the connection with keep-alives. */
  | { kind: "wait"; cursorRejected: boolean }
  /** The client has everything there will ever be: answer 204 so EventSource stops reconnecting. */
  | { kind: "done" };

export function planLogStream(input: {
  lastEventId: string | null;
  pinnedEpoch: number | null;
  /** Epochs of the job's attempts that exist (any order). */
  epochs: readonly number[];
  /** The job is completed: no further attempt can start. */
  jobFinished: boolean;
}): LogStreamPlan {
  const given = input.lastEventId !== null && input.lastEventId.trim() !== "";
  const cursor = given ? decodeLogCursor(input.lastEventId) : null;
  const known =
    cursor !== null &&
    input.epochs.includes(cursor.epoch) &&
    (input.pinnedEpoch === null || cursor.epoch === input.pinnedEpoch);
  const rejected = given && !known;

  if (input.pinnedEpoch !== null) {
    if (!input.epochs.includes(input.pinnedEpoch))
      throw new DomainError("ATTEMPT.NOT_FOUND", `the job has no attempt ${input.pinnedEpoch}`);
    if (!known || !cursor) return { kind: "stream", epoch: input.pinnedEpoch, fromSeq: 0, cursorRejected: rejected };
    return cursor.kind === "end"
      ? { kind: "done" }
      : { kind: "stream", epoch: cursor.epoch, fromSeq: cursor.seq + 1, cursorRejected: false };
  }

  const newest = input.epochs.length > 0 ? Math.max(...input.epochs) : null;
  if (newest === null) return input.jobFinished ? { kind: "done" } : { kind: "wait", cursorRejected: rejected };
  if (!known || !cursor) return { kind: "stream", epoch: newest, fromSeq: 0, cursorRejected: rejected };
  // A cursor inside an older attempt finishes that attempt first: resuming is exact, never a jump.
  if (cursor.kind === "chunk")
    return { kind: "stream", epoch: cursor.epoch, fromSeq: cursor.seq + 1, cursorRejected: false };
  if (cursor.epoch < newest) return { kind: "stream", epoch: newest, fromSeq: 0, cursorRejected: false };
  return input.jobFinished ? { kind: "done" } : { kind: "wait", cursorRejected: false };
}
