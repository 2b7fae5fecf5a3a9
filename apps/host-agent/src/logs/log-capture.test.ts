import { describe, expect, it } from "vitest";
import { LogCapture, type CapturedChunk } from "./log-capture.ts";

function capture(limits: { maxBytes: number; flushBytes: number }, secrets: string[] = []) {
  const chunks: CapturedChunk[] = [];
  const c = new LogCapture(limits, secrets, (x) => chunks.push(x));
  const text = (stream: "stdout" | "stderr") =>
    Buffer.concat(chunks.filter((x) => x.stream === stream).map((x) => x.data)).toString();
  return { c, chunks, text };
}

describe("LogCapture", () => {
  it("cuts at flushBytes, numbers chunks across streams and tracks per-stream offsets", () => {
    const { c, chunks } = capture({ maxBytes: 1 << 20, flushBytes: 4 });
    c.write("stdout", Buffer.from("abcdefghij"));
    c.write("stderr", Buffer.from("xy"));
    c.flush();
    expect(chunks.map((x) => [x.seq, x.stream, x.offset, x.data.toString()])).toEqual([
      [0, "stdout", 0, "abcd"],
      [1, "stdout", 4, "efgh"],
      [2, "stdout", 8, "ij"],
      [3, "stderr", 0, "xy"],
    ]);
    expect(c.bytes).toEqual({ stdout: 10, stderr: 2 });
    expect(c.nextSeq).toBe(4);
  });

  it("keeps the first maxBytes of the attempt, drains and counts the rest", () => {
    const { c, text } = capture({ maxBytes: 10, flushBytes: 64 });
    c.write("stdout", Buffer.from("1234567"));
    c.write("stderr", Buffer.from("abcdef"));
    c.write("stdout", Buffer.from("zzz"));
    c.endStep();
    expect(text("stdout")).toBe("1234567");
    expect(text("stderr")).toBe("abc");
    expect(c.dropped).toEqual({ stdout: 3, stderr: 3 });
  });

  it("masks a secret split across pipe reads and across a chunk cut", () => {
    const { c, text, chunks } = capture({ maxBytes: 1 << 20, flushBytes: 8 }, ["s3cr3t-value"]);
    c.write("stdout", Buffer.from("token=s3cr"));
    c.flush(); // the timer fires mid-secret: the undecided tail is held, not shipped
    c.write("stdout", Buffer.from("3t-value done\n"));
    c.endStep();
    expect(text("stdout")).toBe("token=*** done\n");
    expect(chunks.every((x) => !x.data.toString().includes("s3cr"))).toBe(true);
  });
});
