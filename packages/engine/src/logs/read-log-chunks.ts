// Replay: one attempt's committed chunks in order from any sequence number, from the journal or
// the archive, whichever holds them. The archiver moves a prefix of the sequence (segment row and
// journal delete in one transaction), so a chunk missing from the journal at time t is in a
// segment committed before t: reading the journal first and the archive second never misses one.
import { num, type SqlPool } from "../shared/sql-pool.ts";
import type { LogArchiveReader, LogChunkRecord, SegmentEntry } from "./log-segments.ts";
import type { LogStream } from "@kiln/domain";

export interface ReadLimits {
  /** Exclusive upper bound: the committed nextSeq the caller saw. */
  untilSeq: number;
  /** Soft byte budget of one read (at least one chunk is returned when one is available). */
  maxBytes?: number;
}

const DEFAULT_READ_BYTES = 2 * 1024 * 1024;
const JOURNAL_PAGE = 64;

export async function readLogChunks(
  pool: SqlPool,
  archive: LogArchiveReader,
  attemptId: string,
  fromSeq: number,
  limits: ReadLimits,
): Promise<LogChunkRecord[]> {
  if (fromSeq >= limits.untilSeq) return [];
  const maxBytes = limits.maxBytes ?? DEFAULT_READ_BYTES;
  const { rows } = await pool.query<{
    seq: number;
    stream: LogStream;
    byte_offset: string;
    length: number;
    sha256: string;
    data: Buffer;
  }>({
    name: "log-read-journal",
    text: `SELECT seq, stream, byte_offset, length, sha256, data FROM log_chunk
           WHERE attempt_id = $1 AND seq >= $2 AND seq < $3 ORDER BY seq LIMIT ${JOURNAL_PAGE}`,
    values: [attemptId, fromSeq, limits.untilSeq],
  });
  if (rows[0]?.seq === fromSeq) {
    const out: LogChunkRecord[] = [];
    let bytes = 0;
    let expect = fromSeq;
    for (const r of rows) {
      if (r.seq !== expect || (out.length > 0 && bytes + r.length > maxBytes)) break;
      out.push({
        seq: r.seq,
        stream: r.stream,
        offset: num(r.byte_offset),
        length: r.length,
        sha256: r.sha256,
        data: r.data,
      });
      bytes += r.length;
      expect++;
    }
    return out;
  }
  const segs = await pool.query<{
    object_key: string;
    from_seq: number;
    to_seq: number;
    sha256: string;
    chunks: SegmentEntry[];
  }>({
    name: "log-read-segment",
    text: "SELECT object_key, from_seq, to_seq, sha256, chunks FROM log_segment WHERE attempt_id = $1 AND from_seq <= $2 AND to_seq >= $2",
    values: [attemptId, fromSeq],
  });
  const seg = segs.rows[0];
  if (!seg) throw new Error(`log chunk ${fromSeq} of attempt ${attemptId} is in neither the journal nor the archive`);
  return archive.chunks(
    { objectKey: seg.object_key, fromSeq: seg.from_seq, toSeq: seg.to_seq, sha256: seg.sha256, entries: seg.chunks },
    fromSeq,
    limits.untilSeq,
    maxBytes,
  );
}

/** One stream's bytes in order (GET .../logs/raw), up to the head the caller loaded. */
export async function* readStreamBytes(
  pool: SqlPool,
  archive: LogArchiveReader,
  attemptId: string,
  untilSeq: number,
  stream: LogStream,
): AsyncGenerator<Buffer, void> {
  let next = 0;
  while (next < untilSeq) {
    const chunks = await readLogChunks(pool, archive, attemptId, next, { untilSeq });
    const last = chunks[chunks.length - 1];
    if (!last) return;
    for (const c of chunks) if (c.stream === stream) yield c.data;
    next = last.seq + 1;
  }
}
