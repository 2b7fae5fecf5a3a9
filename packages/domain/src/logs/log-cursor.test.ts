import { describe, expect, it } from "vitest";
import { DomainError } from "../shared/errors.ts";
import { decodeLogCursor, encodeLogCursor } from "./log-cursor.ts";
import { planLogStream } from "./log-stream-plan.ts";

describe("log cursors", () => {
  it("round-trip and stay ASCII", () => {
    for (const c of [
      { epoch: 1, kind: "chunk", seq: 0 },
      { epoch: 3, kind: "chunk", seq: 123456789 },
      { epoch: 2, kind: "end" },
    ] as const) {
      const text = encodeLogCursor(c);
      expect(text).toMatch(/^[\x21-\x7e]+$/);
      expect(decodeLogCursor(text)).toEqual(c);
    }
  });

  it("reject anything the server could not have issued", () => {
    for (const bad of [
      "",
      "1",
      "0:1",
      "1:-1",
      "1:01",
      "a:b",
      "1:2:3",
      "1:end:x",
      "99999999999:1",
      "1:9999999999999999",
      "1:1\n",
    ]) {
      expect(decodeLogCursor(bad), bad).toBeNull();
    }
    expect(decodeLogCursor(null)).toBeNull();
  });
});

describe("planLogStream", () => {
  const plan = (lastEventId: string | null, epochs: number[], opts: { pinned?: number; finished?: boolean } = {}) =>
    planLogStream({ lastEventId, pinnedEpoch: opts.pinned ?? null, epochs, jobFinished: opts.finished ?? false });

  it("follows the newest attempt from the start, and waits while the job is queued", () => {
    expect(plan(null, [1, 2])).toEqual({ kind: "stream", epoch: 2, fromSeq: 0, cursorRejected: false });
    expect(plan(null, [])).toEqual({ kind: "wait", cursorRejected: false });
    expect(plan(null, [], { finished: true })).toEqual({ kind: "done" });
  });

  it("resumes exactly after the cursor, finishing an older attempt before moving on", () => {
    expect(plan("2:41", [1, 2])).toEqual({ kind: "stream", epoch: 2, fromSeq: 42, cursorRejected: false });
    expect(plan("1:7", [1, 2])).toEqual({ kind: "stream", epoch: 1, fromSeq: 8, cursorRejected: false });
    expect(plan("1:end", [1, 2])).toEqual({ kind: "stream", epoch: 2, fromSeq: 0, cursorRejected: false });
  });

  it("after the end of the newest attempt: 204 when the job is finished, else wait for a retry", () => {
    expect(plan("2:end", [1, 2], { finished: true })).toEqual({ kind: "done" });
    expect(plan("2:end", [1, 2])).toEqual({ kind: "wait", cursorRejected: false });
  });

  it("a malformed or unknown cursor gets a full replay with an explicit notice, never silence", () => {
    expect(plan("garbage", [1])).toEqual({ kind: "stream", epoch: 1, fromSeq: 0, cursorRejected: true });
    expect(plan("5:3", [1])).toEqual({ kind: "stream", epoch: 1, fromSeq: 0, cursorRejected: true });
    expect(plan("garbage", [])).toEqual({ kind: "wait", cursorRejected: true });
  });

  it("?attempt= pins one attempt", () => {
    expect(plan(null, [1, 2], { pinned: 1 })).toEqual({ kind: "stream", epoch: 1, fromSeq: 0, cursorRejected: false });
    expect(plan("1:4", [1, 2], { pinned: 1 })).toEqual({ kind: "stream", epoch: 1, fromSeq: 5, cursorRejected: false });
    expect(plan("1:end", [1, 2], { pinned: 1 })).toEqual({ kind: "done" });
    expect(plan("2:4", [1, 2], { pinned: 1 })).toEqual({ kind: "stream", epoch: 1, fromSeq: 0, cursorRejected: true });
    expect(() => plan(null, [1], { pinned: 3 })).toThrow(DomainError);
  });
});
