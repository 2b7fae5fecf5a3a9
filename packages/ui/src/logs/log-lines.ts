// The log viewer's model: bytes in (per stream, in arrival order), numbered lines out. Lives outside
// React so a 50 MB log is appended in place rather than copied on every chunk; the viewer reads
// `version` to know when to re-render.
import { DEFAULT_STYLE, hasControls, isDefaultStyle, styleAfter, type AnsiStyle } from "./ansi.ts";

export type LogStream = "stdout" | "stderr";
export type LineKind = "stdout" | "stderr" | "gap" | "truncated" | "attempt";

/** Lines longer than this are cut into continuation lines so one runaway line cannot freeze layout. */
export const MAX_LINE_CHARS = 16_384;

const KIND_CODE: Record<LineKind, number> = { stdout: 0, stderr: 1, gap: 2, truncated: 3, attempt: 4 };
const KINDS: LineKind[] = ["stdout", "stderr", "gap", "truncated", "attempt"];
const isMarker = (code: number | undefined) => code !== undefined && code >= 2;

interface StreamState {
  decoder: TextDecoder;
  partial: string;
  /** Next byte offset expected from this stream; lower offsets are replays after a reconnect. */
  nextOffset: number;
  style: AnsiStyle;
}

export class LogLines {
  private texts: string[] = [];
  private kinds: number[] = [];
  /** Style in effect at the start of a line, only where it is not the default (sparse). */
  private startStyles = new Map<number, AnsiStyle>();
  /** Row indices of marker rows, ascending; markers have no line number. */
  private markers: number[] = [];
  private streams: Record<LogStream, StreamState> = { stdout: newStream(), stderr: newStream() };
  private bytes = 0;
  private epoch: number | null = null;
  version = 0;

  get length(): number {
    return this.texts.length;
  }

  get totalBytes(): number {
    return this.bytes;
  }

  text(i: number): string {
    return this.texts[i] ?? "";
  }

  kind(i: number): LineKind {
    return KINDS[this.kinds[i] ?? 0] ?? "stdout";
  }

  startStyle(i: number): AnsiStyle {
    return this.startStyles.get(i) ?? DEFAULT_STYLE;
  }

  /** 1-based line number of a row (what #L123 permalinks use), or 0 for a marker row. */
  lineNumber(row: number): number {
    if (isMarker(this.kinds[row])) return 0;
    let before = 0;
    for (const m of this.markers) if (m < row) before++;
    return row + 1 - before;
  }

  /** The row showing 1-based line `n`, or -1 when the log has no such line (yet). */
  rowOf(n: number): number {
    let row = n - 1;
    for (const m of this.markers) if (m <= row) row++;
    return n >= 1 && row < this.texts.length ? row : -1;
  }

  /** The text of every numbered line, in order: element i is line i + 1 (markers have no number). */
  numberedLines(): string[] {
    return this.texts.filter((_, row) => !isMarker(this.kinds[row]));
  }

  /** The last partial (unterminated) line of each stream, shown while the job is live. */
  pending(): { stream: LogStream; text: string }[] {
    return (["stdout", "stderr"] as const)
      .filter((s) => this.streams[s].partial !== "")
      .map((s) => ({ stream: s, text: this.streams[s].partial }));
  }

  /**
   * Appends a chunk. UTF-8 is decoded per stream with `stream: true`, so a character split across
   * two chunks is decoded once both halves arrived instead of becoming two U+FFFD. Bytes before the
   * stream's known offset were already shown (a reconnect replayed them) and are skipped.
   */
  push(stream: LogStream, offset: number, data: Uint8Array): void {
    const st = this.streams[stream];
    let chunk = data;
    if (offset < st.nextOffset) {
      const skip = st.nextOffset - offset;
      if (skip >= chunk.length) return;
      chunk = chunk.subarray(skip);
    }
    st.nextOffset = Math.max(st.nextOffset, offset) + chunk.length;
    this.bytes += chunk.length;
    this.take(stream, st.decoder.decode(chunk, { stream: true }));
    this.version++;
  }

  /**
   * An attempt's output begins. Offsets restart at 0 per attempt, so stream state restarts too; a
   * retry (epoch 2+) gets a marker row so its output is not mistaken for a continuation.
   */
  beginAttempt(epoch: number): void {
    if (epoch === this.epoch) return;
    this.flush();
    this.streams = { stdout: newStream(), stderr: newStream() };
    if (this.epoch !== null || epoch > 1)
      this.append("attempt", `Attempt ${epoch} starts here: the job ran again after the previous attempt ended.`);
    this.epoch = epoch;
    this.version++;
  }

  /** Forget everything: the server is about to replay the log from its start. */
  reset(): void {
    this.texts = [];
    this.kinds = [];
    this.startStyles = new Map();
    this.markers = [];
    this.streams = { stdout: newStream(), stderr: newStream() };
    this.bytes = 0;
    this.epoch = null;
    this.version++;
  }

  /** A marker line: bytes the server could not deliver, or output dropped past the size cap. */
  mark(kind: "gap" | "truncated", message: string): void {
    this.flush();
    this.append(kind, message);
    this.version++;
  }

  /** End of log: emit unterminated last lines and any bytes held by the decoders. */
  flush(): void {
    for (const s of ["stdout", "stderr"] as const) {
      const st = this.streams[s];
      const rest = st.partial + st.decoder.decode();
      st.partial = "";
      if (rest !== "") this.emit(s, rest);
    }
    this.version++;
  }

  private take(stream: LogStream, text: string): void {
    const st = this.streams[stream];
    let start = 0;
    let nl = text.indexOf("\n");
    while (nl !== -1) {
      const line = st.partial + text.slice(start, nl);
      st.partial = "";
      this.emit(stream, line);
      start = nl + 1;
      nl = text.indexOf("\n", start);
    }
    st.partial += text.slice(start);
    while (st.partial.length > MAX_LINE_CHARS) {
      this.emit(stream, st.partial.slice(0, MAX_LINE_CHARS));
      st.partial = st.partial.slice(MAX_LINE_CHARS);
    }
  }

  private emit(stream: LogStream, raw: string): void {
    const st = this.streams[stream];
    const startStyle = st.style;
    const line = overwriteCarriageReturns(raw);
    for (let i = 0; i < line.length || i === 0; i += MAX_LINE_CHARS) {
      const part = line.slice(i, i + MAX_LINE_CHARS);
      const row = this.append(stream, part);
      if (!isDefaultStyle(st.style)) this.startStyles.set(row, st.style);
      if (hasControls(part)) st.style = styleAfter(part, st.style);
    }
    // Escapes in text a carriage return overwrote still changed the terminal's state.
    if (line !== raw && hasControls(raw)) st.style = styleAfter(raw, startStyle);
  }

  private append(kind: LineKind, text: string): number {
    const row = this.texts.length;
    this.texts.push(text);
    this.kinds.push(KIND_CODE[kind]);
    if (isMarker(KIND_CODE[kind])) this.markers.push(row);
    return row;
  }
}

function newStream(): StreamState {
  return { decoder: new TextDecoder("utf-8"), partial: "", nextOffset: 0, style: DEFAULT_STYLE };
}

/**
 * A terminal returns to column 0 on a bare CR and overwrites, which is how progress bars redraw;
 * showing the last state of the line is what the user saw. CRLF line ends are plain line ends.
 */
export function overwriteCarriageReturns(line: string): string {
  const trimmed = line.endsWith("\r") ? line.slice(0, -1) : line;
  const cr = trimmed.lastIndexOf("\r");
  if (cr === -1) return trimmed;
  // Keep the tail after the last CR that is followed by text (an empty redraw keeps the previous).
  const parts = trimmed.split("\r").filter((p) => p !== "");
  return parts[parts.length - 1] ?? "";
}
