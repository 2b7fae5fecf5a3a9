// The embedded store's multipart completion (@kiln/testkit s3-multipart.ts, ADR 0007 "Embedded
// store"): S3's answers and ETag, one completion per upload, never a half-assembled object.
import {
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  GetObjectCommand,
  HeadObjectCommand,
  UploadPartCommand,
} from "@aws-sdk/client-s3";
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { s3ErrorName } from "../../src/artifacts/store-ops.ts";
import { bytes, md5Of, MiB, sha256, useS3 } from "./support.ts";

const s3 = useS3();

async function uploadTwoParts(
  key: string,
  data: Buffer,
): Promise<{ uploadId: string; parts: { PartNumber: number; ETag: string }[] }> {
  const c = s3.store().s3;
  const { UploadId } = await c.send(new CreateMultipartUploadCommand({ Bucket: "kiln", Key: key }));
  const parts = [];
  for (const [i, body] of [data.subarray(0, 5 * MiB), data.subarray(5 * MiB)].entries()) {
    const r = await c.send(
      new UploadPartCommand({ Bucket: "kiln", Key: key, UploadId, PartNumber: i + 1, Body: body }),
    );
    parts.push({ PartNumber: i + 1, ETag: r.ETag! });
  }
  return { uploadId: UploadId!, parts };
}

const complete = (key: string, uploadId: string, parts: { PartNumber: number; ETag: string }[]) =>
  s3.store().s3.send(
    new CompleteMultipartUploadCommand({
      Bucket: "kiln",
      Key: key,
      UploadId: uploadId,
      MultipartUpload: { Parts: parts },
    }),
  );

describe("the embedded store's multipart completion", () => {
  it("assembles once when asked twice at once, with S3's multipart ETag and exactly the parts' bytes", async () => {
    const data = bytes(5 * MiB + 12_345, 41);
    const { uploadId, parts } = await uploadTwoParts("twice", data);
    const results = await Promise.allSettled([complete("twice", uploadId, parts), complete("twice", uploadId, parts)]);
    expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(1);
    const failed = results.find((r) => r.status === "rejected");
    expect(s3ErrorName((failed as PromiseRejectedResult).reason)).toBe("NoSuchUpload");
    const head = await s3.store().s3.send(new HeadObjectCommand({ Bucket: "kiln", Key: "twice" }));
    const composite = createHash("md5")
      .update(
        Buffer.concat(
          [md5Of(data.subarray(0, 5 * MiB)), md5Of(data.subarray(5 * MiB))].map((m) => Buffer.from(m, "hex")),
        ),
      )
      .digest("hex");
    expect(head.ETag).toBe(`"${composite}-2"`);
    expect(head.ContentLength).toBe(data.length);
    const body = await (
      await s3.store().s3.send(new GetObjectCommand({ Bucket: "kiln", Key: "twice" }))
    ).Body!.transformToByteArray();
    expect(sha256(body)).toBe(sha256(data));
  });

  it("answers as S3 does: InvalidPart for an ETag it does not hold, InvalidPartOrder, NoSuchUpload for an unknown id", async () => {
    const data = bytes(5 * MiB + 7, 42);
    const { uploadId, parts } = await uploadTwoParts("answers", data);
    const wrongEtag = [{ PartNumber: 1, ETag: `"${"0".repeat(32)}"` }, parts[1]!];
    await expect(complete("answers", uploadId, wrongEtag)).rejects.toSatisfy(
      (e: unknown) => s3ErrorName(e) === "InvalidPart",
    );
    await expect(complete("answers", uploadId, [parts[1]!, parts[0]!])).rejects.toSatisfy(
      (e: unknown) => s3ErrorName(e) === "InvalidPartOrder",
    );
    await expect(complete("answers", "feedbeef", parts)).rejects.toSatisfy(
      (e: unknown) => s3ErrorName(e) === "NoSuchUpload",
    );
    // Nothing was stored by the refused completions; the right list still completes.
    await expect(s3.store().s3.send(new HeadObjectCommand({ Bucket: "kiln", Key: "answers" }))).rejects.toBeTruthy();
    await complete("answers", uploadId, parts);
    const body = await (
      await s3.store().s3.send(new GetObjectCommand({ Bucket: "kiln", Key: "answers" }))
    ).Body!.transformToByteArray();
    expect(sha256(body)).toBe(sha256(data));
  });
});
