import { describe, expect, it } from "vitest";
import { LogLines, MAX_LINE_CHARS, overwriteCarriageReturns } from "./log-lines.ts";

const enc = new TextEncoder();
const lines = (l: LogLines) => Array.from({ length: l.length }, (_, i) => l.text(i));

describe("LogLines: bytes to numbered lines", () => {
  it("decodes UTF-8 characters split across chunks (every split point)", () => {
    const text = "naïve ☃ 日本語 🦀 done\n";
    const bytes = enc.encode(text);
    for (let cut = 1; cut < bytes.length; cut++) {
      const l = new LogLines();
      l.push("stdout", 0, bytes.subarray(0, cut));
      l.push("stdout", cut, bytes.subarray(cut));
      expect(lines(l)).toEqual(["naïve ☃ 日本語 🦀 done"]);
    }
  });

  it("keeps stdout and stderr partial lines apart when they interleave", () => {
    const l = new LogLines();
    l.push("stdout", 0, enc.encode("out-a"));
    l.push("stderr", 0, enc.encode("err-1\nerr-"));
    l.push("stdout", 5, enc.encode("-b\n"));
    l.push("stderr", 10, enc.encode("2\n"));
    expect(lines(l)).toEqual(["err-1", "out-a-b", "err-2"]);
    expect([l.kind(0), l.kind(1), l.kind(2)]).toEqual(["stderr", "stdout", "stderr"]);
  });

  it("skips bytes a reconnect replays, by offset", () => {
    const l = new LogLines();
    l.push("stdout", 0, enc.encode("one\ntw"));
    l.push("stdout", 4, enc.encode("two\nthree\n")); // resumed from an earlier cursor
    l.push("stdout", 0, enc.encode("one\n")); // entirely old
    expect(lines(l)).toEqual(["one", "two", "three"]);
  });

  it("CRLF ends a line; a bare CR redraws it (progress bars)", () => {
    const l = new LogLines();
    l.push("stdout", 0, enc.encode("a\r\n10%\r50%\r100%\nb\r\r\n"));
    expect(lines(l)).toEqual(["a", "100%", "b"]);
    expect(overwriteCarriageReturns("x\r")).toBe("x");
  });

  it("flush emits the unterminated last line and shows it as pending before", () => {
    const l = new LogLines();
    l.push("stdout", 0, enc.encode("done\nno newline"));
    expect(l.pending()).toEqual([{ stream: "stdout", text: "no newline" }]);
    l.flush();
    expect(lines(l)).toEqual(["done", "no newline"]);
    expect(l.pending()).toEqual([]);
  });

  it("cuts runaway lines into continuation rows", () => {
    const l = new LogLines();
    l.push("stdout", 0, enc.encode("x".repeat(MAX_LINE_CHARS * 2 + 5) + "\n"));
    expect(lines(l).map((s) => s.length)).toEqual([MAX_LINE_CHARS, MAX_LINE_CHARS, 5]);
  });

  it("markers have rows but no line numbers; permalinks map line numbers to rows", () => {
    const l = new LogLines();
    l.push("stdout", 0, enc.encode("1\n2\n"));
    l.mark("gap", "bytes 4-100 are missing");
    l.push("stdout", 100, enc.encode("3\n"));
    l.mark("truncated", "log truncated");
    expect(lines(l)).toEqual(["1", "2", "bytes 4-100 are missing", "3", "log truncated"]);
    expect([0, 1, 2, 3, 4].map((r) => l.lineNumber(r))).toEqual([1, 2, 0, 3, 0]);
    expect([1, 2, 3, 4].map((n) => l.rowOf(n))).toEqual([0, 1, 3, -1]);
  });

  it("records the style in effect at each line start, only where it is not the default", () => {
    const l = new LogLines();
    l.push("stdout", 0, enc.encode("\u001b[31mred\nstill red\n\u001b[0mplain\nplain\n"));
    expect(l.startStyle(0).fg).toBeNull();
    expect(l.startStyle(1).fg).toEqual({ kind: "palette", index: 1 });
    expect(l.startStyle(2).fg).toEqual({ kind: "palette", index: 1 });
    expect(l.startStyle(3).fg).toBeNull();
  });

  it("ingests 50 MB in 64 KiB chunks quickly", () => {
    const line = enc.encode("2026-01-01T00:00:00Z \u001b[32mINFO\u001b[0m compiling module 12345 of 99999 ... ok\n");
    const chunk = new Uint8Array(64 * 1024);
    for (let i = 0; i < chunk.length; i++) chunk[i] = line[i % line.length]!;
    const l = new LogLines();
    const t = performance.now();
    let offset = 0;
    while (offset < 50 * 1024 * 1024) {
      l.push("stdout", offset, chunk);
      offset += chunk.length;
    }
    l.flush();
    const ms = performance.now() - t;
    console.log(`[log-lines] 50 MiB -> ${l.length} lines in ${ms.toFixed(0)} ms`);
    expect(l.length).toBeGreaterThan(600_000);
    // A guard against quadratic regressions, loose enough for a saturated shared CI machine.
    expect(ms).toBeLessThan(30_000);
  });
});

describe("LogLines: attempts and replays", () => {
  it("restarts offsets per attempt and marks a retry", () => {
    const l = new LogLines();
    l.beginAttempt(1);
    l.push("stdout", 0, enc.encode("first try\n"));
    l.beginAttempt(2);
    l.push("stdout", 0, enc.encode("second try\n"));
    l.beginAttempt(2); // a resume inside attempt 2 does not add another marker
    expect(lines(l)).toEqual([
      "first try",
      "Attempt 2 starts here: the job ran again after the previous attempt ended.",
      "second try",
    ]);
    expect([l.lineNumber(0), l.lineNumber(1), l.lineNumber(2)]).toEqual([1, 0, 2]);
  });

  it("reset forgets everything before a full replay", () => {
    const l = new LogLines();
    l.push("stdout", 0, enc.encode("a\nb\n"));
    l.reset();
    l.push("stdout", 0, enc.encode("a\nb\n"));
    expect(lines(l)).toEqual(["a", "b"]);
  });
});
