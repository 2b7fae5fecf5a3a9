import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { DomainError } from "../shared/errors.ts";
import {
  artifactObjectKey,
  assertCurrentAttempt,
  decideArtifactOpen,
  decideArtifactPart,
  decideArtifactSeal,
  decideStoreDigestCheck,
  isCollectable,
} from "./artifact-rules.ts";

const sha = (c: string) => c.repeat(64);
const code = (f: () => unknown) => {
  try {
    f();
  } catch (e) {
    return e instanceof DomainError ? e.code : String(e);
  }
  return null;
};

describe("fencing artifact writes", () => {
  const live = {
    runStatus: "running" as const,
    attempt: { epoch: 2, status: "running" as const, leaseLive: true },
    jobCurrentEpoch: 2,
    reportedEpoch: 2,
  };
  it("lets only the current live attempt of a running run write", () => {
    expect(code(() => assertCurrentAttempt(live))).toBeNull();
    expect(code(() => assertCurrentAttempt({ ...live, reportedEpoch: 1 }))).toBe("ATTEMPT.STALE_EPOCH");
    expect(code(() => assertCurrentAttempt({ ...live, attempt: { ...live.attempt, epoch: 1 } }))).toBe(
      "ATTEMPT.STALE_EPOCH",
    );
    expect(code(() => assertCurrentAttempt({ ...live, attempt: { ...live.attempt, status: "completed" } }))).toBe(
      "ATTEMPT.STALE_EPOCH",
    );
    expect(code(() => assertCurrentAttempt({ ...live, attempt: { ...live.attempt, leaseLive: false } }))).toBe(
      "ATTEMPT.LEASE_EXPIRED",
    );
    expect(code(() => assertCurrentAttempt({ ...live, runStatus: "cancelling" }))).toBe("RUN.CANCELLED");
  });
});

describe("upload sessions", () => {
  const req = { name: "app", sizeBytes: 10, sha256: sha("a"), format: "file" as const };
  it("creates, resumes only with the original bytes, and reports a sealed session", () => {
    expect(decideArtifactOpen(["app"], req, null)).toEqual({ kind: "create" });
    const existing = {
      id: "g1",
      state: "uploading" as const,
      sizeBytes: 10,
      sha256: sha("a"),
      format: "file" as const,
    };
    expect(decideArtifactOpen(["app"], req, existing)).toEqual({ kind: "resume", generationId: "g1" });
    expect(decideArtifactOpen(["app"], req, { ...existing, state: "sealed" })).toEqual({
      kind: "already_sealed",
      generationId: "g1",
    });
    expect(code(() => decideArtifactOpen(["app"], { ...req, sha256: sha("b") }, existing))).toBe(
      "ARTIFACT.SESSION_CONFLICT",
    );
    expect(code(() => decideArtifactOpen(["app"], { ...req, sizeBytes: 11 }, existing))).toBe(
      "ARTIFACT.SESSION_CONFLICT",
    );
    expect(code(() => decideArtifactOpen(["other"], req, null))).toBe("ARTIFACT.NOT_DECLARED");
    expect(code(() => decideArtifactOpen(["app"], { ...req, sha256: "xyz" }, null))).toBe("REQUEST.INVALID");
  });

  it("accepts a part retry only with identical bytes", () => {
    const part = { partNumber: 1, sizeBytes: 5, sha256: sha("c") };
    expect(decideArtifactPart(5, part, null)).toBe("insert");
    expect(decideArtifactPart(5, part, { sizeBytes: 5, sha256: sha("c") })).toBe("retry");
    expect(code(() => decideArtifactPart(5, part, { sizeBytes: 5, sha256: sha("d") }))).toBe("ARTIFACT.PART_CONFLICT");
    expect(code(() => decideArtifactPart(6, part, null))).toBe("ARTIFACT.PART_CONFLICT");
    expect(code(() => decideArtifactPart(null, part, null))).toBe("ARTIFACT.PART_CONFLICT");
  });

  it("seals only when size and digest both match", () => {
    expect(decideArtifactSeal({ sizeBytes: 3, sha256: sha("a") }, { sizeBytes: 3, sha256: sha("a") })).toBe("seal");
    expect(decideArtifactSeal({ sizeBytes: 3, sha256: sha("a") }, { sizeBytes: 3, sha256: sha("b") })).toBe("mismatch");
    expect(decideArtifactSeal({ sizeBytes: 3, sha256: sha("a") }, { sizeBytes: 4, sha256: sha("a") })).toBe("mismatch");
  });

  it("puts the epoch and a fresh generation id in every object key", () => {
    expect(
      artifactObjectKey({ orgId: "o", runId: "r", jobId: "j", epoch: 2, generationId: "g", name: "app.jar" }),
    ).toBe("artifacts/o/r/j/2/g/app.jar");
  });
});

describe("garbage", () => {
  const base = {
    bound: false,
    state: "uploading" as const,
    attemptFinished: true,
    attemptIsCurrent: false,
    ageMs: 10,
    graceMs: 5,
  };
  it("never collects bound or still-live generations, nor before the grace period", () => {
    expect(isCollectable(base)).toBe(true);
    expect(isCollectable({ ...base, bound: true })).toBe(false);
    expect(isCollectable({ ...base, attemptFinished: false, attemptIsCurrent: true })).toBe(false);
    expect(isCollectable({ ...base, ageMs: 1 })).toBe(false);
  });
});

describe("decideStoreDigestCheck", () => {
  const md5 = (b: Uint8Array) => createHash("md5").update(b).digest("hex");
  const parts = [Buffer.alloc(5 * 1024 * 1024, 1), Buffer.alloc(5 * 1024 * 1024, 2), Buffer.from("tail")];
  const md5s = parts.map(md5);
  const size = parts.reduce((n, p) => n + p.length, 0);
  // S3's multipart ETag, computed independently of the function under test.
  const s3Etag = `"${createHash("md5")
    .update(Buffer.concat(md5s.map((m) => Buffer.from(m, "hex"))))
    .digest("hex")}-3"`;

  it("verifies when the store's multipart ETag is the MD5 of the part MD5s and the size matches", () => {
    expect(decideStoreDigestCheck({ sizeBytes: size, partMd5s: md5s }, { sizeBytes: size, etag: s3Etag }, md5)).toBe(
      "verified",
    );
  });

  it("reads back on any doubt", () => {
    const whole = `"${md5(Buffer.concat(parts))}"`; // a store that rewrote the object (stock s3rver)
    expect(decideStoreDigestCheck({ sizeBytes: size, partMd5s: md5s }, { sizeBytes: size, etag: whole }, md5)).toBe(
      "read_back",
    );
    expect(
      decideStoreDigestCheck({ sizeBytes: size, partMd5s: md5s }, { sizeBytes: size - 1, etag: s3Etag }, md5),
    ).toBe("read_back");
    expect(decideStoreDigestCheck({ sizeBytes: size, partMd5s: md5s }, { sizeBytes: size, etag: null }, md5)).toBe(
      "read_back",
    );
    expect(
      decideStoreDigestCheck(
        { sizeBytes: size, partMd5s: [md5s[0]!, null, md5s[2]!] },
        { sizeBytes: size, etag: s3Etag },
        md5,
      ),
    ).toBe("read_back");
    expect(
      decideStoreDigestCheck(
        { sizeBytes: size, partMd5s: [md5s[1]!, md5s[0]!, md5s[2]!] },
        { sizeBytes: size, etag: s3Etag },
        md5,
      ),
    ).toBe("read_back");
    expect(
      decideStoreDigestCheck({ sizeBytes: size, partMd5s: md5s.slice(0, 2) }, { sizeBytes: size, etag: s3Etag }, md5),
    ).toBe("read_back");
    expect(decideStoreDigestCheck({ sizeBytes: 0, partMd5s: [] }, { sizeBytes: 0, etag: s3Etag }, md5)).toBe(
      "read_back",
    );
  });
});
