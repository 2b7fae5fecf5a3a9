// The embedded S3 store accepts only its own key pair (issue 15): s3rver's public default pair, a
// wrong secret, anonymous requests and expired presigned URLs are refused; the pair survives a restart.
import { mkdtemp, rm, stat } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { GetObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { getSignedUrl } from "@aws-sdk/s3-request-presigner";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startS3, type S3Handle } from "./embedded-s3.ts";
import { S3_CREDENTIALS_FILE } from "./s3-auth.ts";
import { startS3WithAbort } from "./s3-with-abort.ts";

let dir = "";
let s3: S3Handle;

function client(accessKeyId: string, secretAccessKey: string, endpoint = s3.endpoint): S3Client {
  return new S3Client({
    endpoint,
    region: "us-east-1",
    forcePathStyle: true,
    credentials: { accessKeyId, secretAccessKey },
  });
}

async function refusal(p: Promise<unknown>): Promise<{ name: string; status: number | undefined }> {
  try {
    await p;
  } catch (e) {
    const err = e as { name: string; $metadata?: { httpStatusCode?: number } };
    return { name: err.name, status: err.$metadata?.httpStatusCode };
  }
  throw new Error("the store accepted the request");
}

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "kiln-s3-auth-"));
  s3 = await startS3({ dataDir: path.join(dir, "s3"), bucket: "kiln" });
  const owner = client(s3.accessKeyId, s3.secretAccessKey);
  await owner.send(new PutObjectCommand({ Bucket: "kiln", Key: "tenant-a/secret.txt", Body: "tenant a's bytes" }));
  owner.destroy();
});
afterAll(async () => {
  await s3?.stop();
  await rm(dir, { recursive: true, force: true });
});

describe("embedded S3 credentials", () => {
  it("generates a key pair per instance, not s3rver's public one, kept 0600 in the data dir", async () => {
    expect(s3.accessKeyId).not.toBe("S3RVER");
    expect(s3.secretAccessKey).not.toBe("S3RVER");
    expect(s3.secretAccessKey.length).toBeGreaterThanOrEqual(32);
    const mode = (await stat(path.join(dir, "s3", S3_CREDENTIALS_FILE))).mode & 0o777;
    expect(mode).toBe(0o600);
    const other = await startS3({ dataDir: path.join(dir, "other"), bucket: "kiln" });
    try {
      expect(other.accessKeyId).not.toBe(s3.accessKeyId);
      expect(other.secretAccessKey).not.toBe(s3.secretAccessKey);
      // Each store accepts only its own pair, even with both in one process.
      const cross = client(other.accessKeyId, other.secretAccessKey);
      expect((await refusal(cross.send(new ListObjectsV2Command({ Bucket: "kiln" })))).status).toBe(403);
      cross.destroy();
    } finally {
      await other.stop();
    }
  });

  it("serves the right key pair, by header signature and by presigned URL", async () => {
    const owner = client(s3.accessKeyId, s3.secretAccessKey);
    const got = await owner.send(new GetObjectCommand({ Bucket: "kiln", Key: "tenant-a/secret.txt" }));
    expect(await got.Body?.transformToString()).toBe("tenant a's bytes");
    const url = await getSignedUrl(owner, new GetObjectCommand({ Bucket: "kiln", Key: "tenant-a/secret.txt" }), {
      expiresIn: 60,
    });
    const res = await fetch(url);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe("tenant a's bytes");
    owner.destroy();
  });

  it("refuses s3rver's default key pair", async () => {
    const dflt = client("S3RVER", "S3RVER");
    const r = await refusal(dflt.send(new GetObjectCommand({ Bucket: "kiln", Key: "tenant-a/secret.txt" })));
    expect(r).toEqual({ name: "InvalidAccessKeyId", status: 403 });
    expect((await refusal(dflt.send(new ListObjectsV2Command({ Bucket: "kiln" })))).status).toBe(403);
    dflt.destroy();
  });

  it("refuses the right key id with a wrong secret, in a header and in a presigned URL", async () => {
    const wrong = client(s3.accessKeyId, `${s3.secretAccessKey}x`);
    const r = await refusal(wrong.send(new GetObjectCommand({ Bucket: "kiln", Key: "tenant-a/secret.txt" })));
    expect(r).toEqual({ name: "SignatureDoesNotMatch", status: 403 });
    const put = await refusal(wrong.send(new PutObjectCommand({ Bucket: "kiln", Key: "tenant-a/x", Body: "x" })));
    expect(put.status).toBe(403);
    const url = await getSignedUrl(wrong, new GetObjectCommand({ Bucket: "kiln", Key: "tenant-a/secret.txt" }), {
      expiresIn: 60,
    });
    const res = await fetch(url);
    expect(res.status).toBe(403);
    expect(await res.text()).toContain("SignatureDoesNotMatch");
    wrong.destroy();
  });

  it("refuses anonymous requests, tampered presigned URLs and expired ones", async () => {
    const anon = await fetch(`${s3.endpoint}/kiln/tenant-a/secret.txt`);
    expect(anon.status).toBe(403);
    expect(await anon.text()).not.toContain("tenant a's bytes");
    const owner = client(s3.accessKeyId, s3.secretAccessKey);
    const url = await getSignedUrl(owner, new GetObjectCommand({ Bucket: "kiln", Key: "tenant-a/secret.txt" }), {
      expiresIn: 60,
    });
    const tampered = await fetch(url.replace("tenant-a/secret.txt", "tenant-a/other.txt"));
    expect(tampered.status).toBe(403);
    const expired = await getSignedUrl(owner, new GetObjectCommand({ Bucket: "kiln", Key: "tenant-a/secret.txt" }), {
      expiresIn: 1,
      signingDate: new Date(Date.now() - 60_000),
    });
    const late = await fetch(expired);
    expect(late.status).toBe(403);
    expect(await late.text()).toContain("expired");
    owner.destroy();
  });

  it("keeps the key pair across a restart on the same data dir", async () => {
    const again = await startS3({ dataDir: path.join(dir, "restart"), bucket: "kiln" });
    const first = { accessKeyId: again.accessKeyId, secretAccessKey: again.secretAccessKey };
    await again.stop();
    const restarted = await startS3({ dataDir: path.join(dir, "restart"), bucket: "kiln" });
    try {
      expect({ accessKeyId: restarted.accessKeyId, secretAccessKey: restarted.secretAccessKey }).toEqual(first);
      const c = client(first.accessKeyId, first.secretAccessKey, restarted.endpoint);
      const list = await c.send(new ListObjectsV2Command({ Bucket: "kiln" }));
      expect(list.$metadata.httpStatusCode).toBe(200);
      c.destroy();
    } finally {
      await restarted.stop();
    }
  });

  it("the abort-capable variant checks credentials the same way", async () => {
    const abortable = await startS3WithAbort({ dataDir: path.join(dir, "abort"), bucket: "kiln" });
    try {
      const dflt = client("S3RVER", "S3RVER", abortable.endpoint);
      expect((await refusal(dflt.send(new ListObjectsV2Command({ Bucket: "kiln" })))).status).toBe(403);
      dflt.destroy();
      const owner = client(abortable.accessKeyId, abortable.secretAccessKey, abortable.endpoint);
      expect((await owner.send(new ListObjectsV2Command({ Bucket: "kiln" }))).$metadata.httpStatusCode).toBe(200);
      owner.destroy();
    } finally {
      await abortable.stop();
    }
  });
});
