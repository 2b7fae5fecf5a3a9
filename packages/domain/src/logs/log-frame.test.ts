import { describe, expect, it } from "vitest";
import { decodeLogFrame, encodeLogFrame } from "./log-frame.ts";

describe("binary log frames", () => {
  it("round-trip a header and the chunk bytes back to back", () => {
    const header = {
      epoch: 2,
      chunks: [
        { seq: 0, length: 3 },
        { seq: 1, length: 2 },
      ],
    };
    const frame = encodeLogFrame(header, [new Uint8Array([1, 2, 3]), new Uint8Array([0, 255])]);
    const decoded = decodeLogFrame(frame);
    expect(decoded?.header).toEqual(header);
    expect([...(decoded?.payload ?? [])]).toEqual([1, 2, 3, 0, 255]);
  });

  it("refuse truncated or nonsensical frames", () => {
    expect(decodeLogFrame(new Uint8Array([0, 0]))).toBeNull();
    expect(decodeLogFrame(new Uint8Array([0, 0, 0, 9, 123]))).toBeNull();
    expect(decodeLogFrame(new Uint8Array([0, 0, 0, 2, 0xff, 0xfe]))).toBeNull();
    expect(decodeLogFrame(new Uint8Array([0xff, 0, 0, 0]))).toBeNull();
  });
});
