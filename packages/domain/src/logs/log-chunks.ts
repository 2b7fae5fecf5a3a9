// Chunk identity and the ingest rule (seed 000 section 13). A chunk is identified by
// (run, job, attempt epoch, stream, sequence, byte offset, length, sha256); run, job and epoch
// come from the job token, the rest from the chunk. `seq` numbers every chunk of an attempt in
// the order the agent cut it, across both streams; `offset` is the chunk's first byte within its
// own stream. Independent pipes have no reliable global order, so `seq` is the agent's order and
// nothing more; it is also what replay cursors count.
import { DomainError } from "../shared/errors.ts";
import type { LogState } from "./log-state.ts";

export const LOG_STREAMS = ["stdout", "stderr"] as const;
export type LogStream = (typeof LOG_STREAMS)[number];

/** Largest single chunk accepted (the agent cuts at 64 KiB by default). */
export const MAX_LOG_CHUNK_BYTES = 1024 * 1024;

export interface LogChunkIdentity {
  stream: LogStream;
  seq: number;
  offset: number;
  length: number;
  sha256: string;
}

/** What the journal has committed for one attempt: everything below is contiguous. */
export interface LogPosition {
  /** Chunks 0..nextSeq-1 are committed. */
  nextSeq: number;
  /** Highest contiguous committed offset per stream (= bytes committed). */
  committed: Record<LogStream, number>;
}

export type ChunkBatchDecision = {
  /** New chunks to append, in order. */
  append: LogChunkIdentity[];
  /** Chunks already committed with identical identity (an idempotent retry). */
  duplicates: number;
  after: LogPosition;
};

function sameChunk(a: LogChunkIdentity, b: LogChunkIdentity): boolean {
  return (
    a.stream === b.stream && a.seq === b.seq && a.offset === b.offset && a.length === b.length && a.sha256 === b.sha256
  );
}

/**
 * The ingest rule. A batch is all or nothing:
 * - a chunk below `nextSeq` must equal what is stored (retry: accepted, not stored twice) or the
 *   batch is refused with LOG.CONFLICT (different bytes for a position that is already taken);
 * - the next chunk must be exactly `nextSeq` and start at its stream's committed offset, so the
 *   journal never has holes; a later sequence is LOG.OUT_OF_ORDER (the agent resends from the
 *   committed position it is told);
 * - an ended log takes nothing more (LOG.ENDED), and the per-attempt byte limit is enforced here
 *   too, not only by the agent (LOG.LIMIT_EXCEEDED).
 */
export function decideChunkBatch(input: {
  state: LogState;
  position: LogPosition;
  chunks: readonly LogChunkIdentity[];
  /** Identity of an already committed chunk (seq < nextSeq), if the journal still holds it. */
  stored: (seq: number) => LogChunkIdentity | undefined;
  maxBytes: number;
}): ChunkBatchDecision {
  const { position, chunks } = input;
  if (input.state !== "open")
    throw new DomainError("LOG.ENDED", `the log has already ended (${input.state})`, { state: input.state });
  for (let i = 1; i < chunks.length; i++) {
    if ((chunks[i]?.seq ?? 0) <= (chunks[i - 1]?.seq ?? 0))
      throw new DomainError("REQUEST.INVALID", "chunks must be in increasing seq order");
  }
  const next = { nextSeq: position.nextSeq, committed: { ...position.committed } };
  const append: LogChunkIdentity[] = [];
  let duplicates = 0;
  for (const c of chunks) {
    if (c.seq < position.nextSeq) {
      const have = input.stored(c.seq);
      if (!have || !sameChunk(have, c)) {
        throw new DomainError(
          "LOG.CONFLICT",
          `chunk ${c.seq} conflicts with the committed chunk at that position`,
          positionDetails(position),
        );
      }
      duplicates++;
      continue;
    }
    if (c.seq !== next.nextSeq) {
      throw new DomainError("LOG.OUT_OF_ORDER", `expected chunk ${next.nextSeq}, got ${c.seq}`, positionDetails(next));
    }
    if (c.offset !== next.committed[c.stream]) {
      throw new DomainError(
        "LOG.CONFLICT",
        `chunk ${c.seq} starts at ${c.stream} offset ${c.offset}, but ${next.committed[c.stream]} bytes are committed`,
        positionDetails(next),
      );
    }
    append.push(c);
    next.nextSeq++;
    next.committed[c.stream] += c.length;
  }
  if (next.committed.stdout + next.committed.stderr > input.maxBytes && append.length > 0) {
    throw new DomainError(
      "LOG.LIMIT_EXCEEDED",
      `the attempt's log would exceed ${input.maxBytes} bytes`,
      positionDetails(position),
    );
  }
  return { append, duplicates, after: next };
}

function positionDetails(p: LogPosition): Record<string, unknown> {
  return { next_seq: p.nextSeq, committed: { ...p.committed } };
}
