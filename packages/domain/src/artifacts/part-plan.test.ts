import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  DEFAULT_PART_BYTES,
  expectedArtifactPartSize,
  listArtifactParts,
  MAX_ARTIFACT_BYTES,
  planArtifactParts,
  S3_MAX_PARTS,
  S3_MIN_PART_BYTES,
} from "./part-plan.ts";

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

describe("planArtifactParts", () => {
  it("uses 64 MiB parts: 1 GiB is 16 parts, 20 GiB is 320", () => {
    expect(planArtifactParts(GiB)).toEqual({ partSize: 64 * MiB, partCount: 16 });
    expect(planArtifactParts(MAX_ARTIFACT_BYTES)).toEqual({ partSize: 64 * MiB, partCount: 320 });
    expect(MAX_ARTIFACT_BYTES).toBeGreaterThanOrEqual(20e9);
  });

  it("makes an empty or tiny artifact a single part", () => {
    expect(planArtifactParts(0)).toEqual({ partSize: DEFAULT_PART_BYTES, partCount: 1 });
    expect(listArtifactParts(0, planArtifactParts(0))).toEqual([{ partNumber: 1, offset: 0, size: 0 }]);
    expect(planArtifactParts(10)).toEqual({ partSize: DEFAULT_PART_BYTES, partCount: 1 });
  });

  it("refuses artifacts over the limit and part sizes S3 would refuse", () => {
    expect(() => planArtifactParts(MAX_ARTIFACT_BYTES + 1)).toThrow(/limit/);
    expect(() => planArtifactParts(10, S3_MIN_PART_BYTES - 1)).toThrow(/part size/);
    expect(() => planArtifactParts(-1)).toThrow();
  });

  it("always covers every byte exactly once within S3's limits", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: MAX_ARTIFACT_BYTES }),
        fc.integer({ min: 5, max: 512 }),
        (size, partMiB) => {
          const plan = planArtifactParts(size, partMiB * MiB);
          const parts = listArtifactParts(size, plan);
          expect(parts.length).toBe(plan.partCount);
          expect(plan.partCount).toBeLessThanOrEqual(S3_MAX_PARTS);
          expect(parts.reduce((n, p) => n + p.size, 0)).toBe(size);
          parts.forEach((p, i) => {
            expect(p.partNumber).toBe(i + 1);
            if (i < parts.length - 1) expect(p.size).toBeGreaterThanOrEqual(S3_MIN_PART_BYTES);
            expect(expectedArtifactPartSize(size, plan, p.partNumber)).toBe(p.size);
          });
          expect(expectedArtifactPartSize(size, plan, plan.partCount + 1)).toBeNull();
        },
      ),
    );
  });
});
