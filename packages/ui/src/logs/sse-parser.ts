// A server-sent events parser (the WHATWG event-stream format) for fetch() bodies. We read the log
// stream with fetch rather than EventSource so that a 401/403/404 can be told apart from a dropped
// connection and shown as such, and so reconnects resume from our own cursor.

export interface SseEvent {
  /** "message" when the event had no `event:` field. */
  event: string;
  data: string;
  /** The last `id:` seen so far (the resume cursor), or null before the first. */
  id: string | null;
}

export class SseParser {
  private buffer = "";
  private data: string[] = [];
  private event = "";
  private lastId: string | null = null;
  private sawCr = false;
  /** Milliseconds the server asked us to wait before reconnecting (`retry:`), if it did. */
  retryMs: number | null = null;

  constructor(private readonly onEvent: (e: SseEvent) => void) {}

  get cursor(): string | null {
    return this.lastId;
  }

  /** Feed decoded text; complete lines are processed, a trailing partial line is kept. */
  feed(text: string): void {
    let s = this.buffer + text;
    // A CRLF may be split across chunks: the LF after a CR that ended the last chunk is not a line.
    if (this.sawCr && s.startsWith("\n")) s = s.slice(1);
    this.sawCr = false;
    let start = 0;
    if (!s.includes("\r")) {
      // The common case (LF only): jump from newline to newline instead of testing every character.
      for (let nl = s.indexOf("\n"); nl !== -1; nl = s.indexOf("\n", start)) {
        this.line(s.slice(start, nl));
        start = nl + 1;
      }
      this.buffer = s.slice(start);
      return;
    }
    for (let i = 0; i < s.length; i++) {
      const c = s.charCodeAt(i);
      if (c !== 0x0a && c !== 0x0d) continue;
      this.line(s.slice(start, i));
      if (c === 0x0d) {
        if (i + 1 === s.length) this.sawCr = true;
        else if (s.charCodeAt(i + 1) === 0x0a) i++;
      }
      start = i + 1;
    }
    this.buffer = s.slice(start);
  }

  private line(line: string): void {
    if (line === "") return this.dispatch();
    if (line.startsWith(":")) return; // comment: the server's keep-alive
    const colon = line.indexOf(":");
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "data") this.data.push(value);
    else if (field === "event") this.event = value;
    else if (field === "id" && !value.includes("\u0000")) this.lastId = value;
    else if (field === "retry" && /^\d+$/.test(value)) this.retryMs = Number(value);
  }

  private dispatch(): void {
    // Unlike EventSource, an event with a name but no data is still delivered: terminal events may
    // carry nothing but their name.
    if (this.data.length > 0 || this.event !== "")
      this.onEvent({ event: this.event || "message", data: this.data.join("\n"), id: this.lastId });
    this.data = [];
    this.event = "";
  }
}
