// SSE cursors (the `id:` of every event, sent back as Last-Event-ID). ASCII only, so every
// browser returns them unchanged:
//   "<epoch>:<seq>"  after the output event carrying chunk <seq> of attempt <epoch>
//   "<epoch>:end"    after the terminal event (log.sealed / log.truncated / log.gapped)
// A cursor names a position in one attempt's ordered chunk sequence, which is immutable once
// committed, so "resume after this event" is exact on any web process.

export type LogCursor = { epoch: number; kind: "chunk"; seq: number } | { epoch: number; kind: "end" };

const CURSOR = /^([1-9][0-9]{0,8}):(0|[1-9][0-9]{0,14}|end)$/;

export function encodeLogCursor(c: LogCursor): string {
  return c.kind === "end" ? `${c.epoch}:end` : `${c.epoch}:${c.seq}`;
}

/** Null when the text is not a cursor this server could have issued. */
export function decodeLogCursor(text: string | null | undefined): LogCursor | null {
  if (text === null || text === undefined) return null;
  const m = CURSOR.exec(text);
  if (!m || !m[1] || !m[2]) return null;
  const epoch = Number(m[1]);
  if (m[2] === "end") return { epoch, kind: "end" };
  const seq = Number(m[2]);
  return Number.isSafeInteger(seq) ? { epoch, kind: "chunk", seq } : null;
}
