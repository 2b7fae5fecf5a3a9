import { describe, expect, it } from "vitest";
import { SseParser, type SseEvent } from "./sse-parser.ts";

function parse(chunks: string[]): { events: SseEvent[]; p: SseParser } {
  const events: SseEvent[] = [];
  const p = new SseParser((e) => events.push(e));
  for (const c of chunks) p.feed(c);
  return { events, p };
}

describe("SseParser", () => {
  it("parses data events with ids, ignores keep-alive comments", () => {
    const { events, p } = parse([': keep-alive\n\nid: 7\ndata: {"a":1}\n\n: ping\n\n']);
    expect(events).toEqual([{ event: "message", data: '{"a":1}', id: "7" }]);
    expect(p.cursor).toBe("7");
  });

  it("handles events split at every byte, CRLF and CR line ends, and multi-line data", () => {
    const text = "event: log.sealed\r\ndata: {}\r\n\r\nid: 9\rdata: a\rdata: b\r\r";
    for (let cut = 1; cut < text.length; cut++) {
      const { events } = parse([text.slice(0, cut), text.slice(cut)]);
      expect(events).toEqual([
        { event: "log.sealed", data: "{}", id: null },
        { event: "message", data: "a\nb", id: "9" },
      ]);
    }
  });

  it("delivers a named event without data; ignores ids with NUL; reads retry", () => {
    const { events, p } = parse(["id: 3\nevent: log.gapped\n\nid: bad\u0000id\nretry: 2500\ndata: x\n\n"]);
    expect(events.map((e) => [e.event, e.id])).toEqual([
      ["log.gapped", "3"],
      ["message", "3"],
    ]);
    expect(p.retryMs).toBe(2500);
  });

  it("keeps an unfinished event until its blank line arrives", () => {
    const { events, p } = parse(["data: partial"]);
    expect(events).toEqual([]);
    p.feed("\n\n");
    expect(events).toHaveLength(1);
  });
});
