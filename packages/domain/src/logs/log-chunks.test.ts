import { describe, expect, it } from "vitest";
import { DomainError } from "../shared/errors.ts";
import { decideChunkBatch, type LogChunkIdentity, type LogPosition } from "./log-chunks.ts";
import { decideLogOnAttemptEnd, decideSeal } from "./log-state.ts";

const sha = (c: string) => c.repeat(64);
const chunk = (
  seq: number,
  stream: "stdout" | "stderr",
  offset: number,
  length: number,
  digest = "a",
): LogChunkIdentity => ({ seq, stream, offset, length, sha256: sha(digest) });
const start: LogPosition = { nextSeq: 0, committed: { stdout: 0, stderr: 0 } };

function code(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    if (e instanceof DomainError) return e.code;
    throw e;
  }
  return "no error";
}

describe("decideChunkBatch", () => {
  const stored = new Map<number, LogChunkIdentity>([
    [0, chunk(0, "stdout", 0, 10)],
    [1, chunk(1, "stderr", 0, 5)],
  ]);
  const after2: LogPosition = { nextSeq: 2, committed: { stdout: 10, stderr: 5 } };
  const base = { state: "open" as const, stored: (s: number) => stored.get(s), maxBytes: 1000 };

  it("appends contiguous chunks and advances each stream's offset", () => {
    const d = decideChunkBatch({
      ...base,
      position: start,
      chunks: [chunk(0, "stdout", 0, 10), chunk(1, "stderr", 0, 5), chunk(2, "stdout", 10, 3)],
    });
    expect(d.append.map((c) => c.seq)).toEqual([0, 1, 2]);
    expect(d.after).toEqual({ nextSeq: 3, committed: { stdout: 13, stderr: 5 } });
  });

  it("accepts an identical retry idempotently, alone or followed by new chunks", () => {
    expect(
      decideChunkBatch({ ...base, position: after2, chunks: [chunk(0, "stdout", 0, 10), chunk(1, "stderr", 0, 5)] }),
    ).toMatchObject({ append: [], duplicates: 2, after: after2 });
    const d = decideChunkBatch({
      ...base,
      position: after2,
      chunks: [chunk(1, "stderr", 0, 5), chunk(2, "stderr", 5, 1)],
    });
    expect(d).toMatchObject({ duplicates: 1, after: { nextSeq: 3, committed: { stdout: 10, stderr: 6 } } });
  });

  it("refuses other bytes for a committed position", () => {
    expect(code(() => decideChunkBatch({ ...base, position: after2, chunks: [chunk(0, "stdout", 0, 10, "b")] }))).toBe(
      "LOG.CONFLICT",
    );
    expect(code(() => decideChunkBatch({ ...base, position: after2, chunks: [chunk(0, "stdout", 0, 11)] }))).toBe(
      "LOG.CONFLICT",
    );
    expect(code(() => decideChunkBatch({ ...base, position: after2, chunks: [chunk(0, "stderr", 0, 10)] }))).toBe(
      "LOG.CONFLICT",
    );
    // The right sequence number at the wrong offset is a disagreement about bytes, too.
    expect(code(() => decideChunkBatch({ ...base, position: after2, chunks: [chunk(2, "stdout", 9, 1)] }))).toBe(
      "LOG.CONFLICT",
    );
  });

  it("refuses holes, unordered batches, ended logs and oversize logs", () => {
    expect(code(() => decideChunkBatch({ ...base, position: after2, chunks: [chunk(3, "stdout", 10, 1)] }))).toBe(
      "LOG.OUT_OF_ORDER",
    );
    expect(
      code(() =>
        decideChunkBatch({ ...base, position: start, chunks: [chunk(1, "stdout", 0, 1), chunk(0, "stdout", 0, 1)] }),
      ),
    ).toBe("REQUEST.INVALID");
    expect(
      code(() => decideChunkBatch({ ...base, state: "gapped", position: after2, chunks: [chunk(2, "stdout", 10, 1)] })),
    ).toBe("LOG.ENDED");
    expect(
      code(() => decideChunkBatch({ ...base, maxBytes: 15, position: after2, chunks: [chunk(2, "stdout", 10, 1)] })),
    ).toBe("LOG.LIMIT_EXCEEDED");
  });
});

describe("decideSeal", () => {
  const position: LogPosition = { nextSeq: 2, committed: { stdout: 10, stderr: 5 } };
  const none = { stdout: 0, stderr: 0 };
  const declared = { nextSeq: 2, bytes: { stdout: 10, stderr: 5 }, dropped: none };

  it("seals when everything declared is committed; truncated when output was dropped", () => {
    expect(decideSeal({ state: "open", position, dropped: none, declared })).toEqual({ kind: "seal", to: "sealed" });
    expect(
      decideSeal({
        state: "open",
        position,
        dropped: none,
        declared: { ...declared, dropped: { stdout: 7, stderr: 0 } },
      }),
    ).toEqual({ kind: "seal", to: "truncated" });
  });

  it("refuses to seal over missing bytes, and never turns a gapped log into a sealed one", () => {
    expect(
      code(() => decideSeal({ state: "open", position, dropped: none, declared: { ...declared, nextSeq: 3 } })),
    ).toBe("LOG.INCOMPLETE");
    expect(code(() => decideSeal({ state: "gapped", position, dropped: none, declared }))).toBe("LOG.ENDED");
  });

  it("answers a repeated identical seal without changing anything", () => {
    expect(decideSeal({ state: "sealed", position, dropped: none, declared })).toEqual({
      kind: "already",
      state: "sealed",
    });
    expect(
      code(() =>
        decideSeal({
          state: "sealed",
          position,
          dropped: none,
          declared: { ...declared, dropped: { stdout: 1, stderr: 0 } },
        }),
      ),
    ).toBe("LOG.ENDED");
  });

  it("an attempt that ends with its log open leaves a gap marker", () => {
    expect(decideLogOnAttemptEnd("open")).toBe("gapped");
    expect(decideLogOnAttemptEnd(null)).toBe("gapped");
    expect(decideLogOnAttemptEnd("sealed")).toBeNull();
    expect(decideLogOnAttemptEnd("truncated")).toBeNull();
  });
});
