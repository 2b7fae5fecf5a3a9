import { describe, expect, it } from "vitest";
import { StepOutputSink } from "./step-output.ts";

describe("StepOutputSink", () => {
  it("prefixes whole lines per stream, joining lines split across chunks", () => {
    const lines: string[] = [];
    const sink = new StepOutputSink("build#2", (l) => lines.push(l));
    sink.stdout(Buffer.from("hel"));
    sink.stderr(Buffer.from("warn\n"));
    sink.stdout(Buffer.from("lo\nwor"));
    sink.stdout(Buffer.from("ld\r\ntail"));
    sink.flush();
    expect(lines).toEqual([
      "[job build#2 stderr] warn",
      "[job build#2 stdout] hello",
      "[job build#2 stdout] world",
      "[job build#2 stdout] tail",
    ]);
  });

  it("caps output per attempt, counts what it drops and keeps accepting", () => {
    const lines: string[] = [];
    const sink = new StepOutputSink("j#1", (l) => lines.push(l), 10);
    sink.stdout(Buffer.from("12345\n"));
    sink.stdout(Buffer.from("6789\nabcdef\n"));
    sink.stderr(Buffer.from("more\n"));
    sink.flush();
    expect(sink.droppedBytes).toBe(8 + 5);
    expect(lines).toEqual([
      "[job j#1 stdout] 12345",
      "[job j#1 stdout] 6789",
      "[job j#1] output reached 10 bytes for this attempt; further output is dropped",
    ]);
  });
});
