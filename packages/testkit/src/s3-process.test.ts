// The store in its own process (benchmarks): same credentials rule as in-process, and stop() ends the child.
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { ListObjectsV2Command, S3Client } from "@aws-sdk/client-s3";
import { afterAll, describe, expect, it } from "vitest";
import { startS3Process } from "./s3-process.ts";

const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

async function list(endpoint: string, accessKeyId: string, secretAccessKey: string): Promise<number | undefined> {
  const c = new S3Client({
    endpoint,
    region: "us-east-1",
    forcePathStyle: true,
    credentials: { accessKeyId, secretAccessKey },
  });
  try {
    return (await c.send(new ListObjectsV2Command({ Bucket: "kiln" }))).$metadata.httpStatusCode;
  } catch (e) {
    return (e as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
  } finally {
    c.destroy();
  }
}

describe("startS3Process", () => {
  it("runs the store in a child that accepts only its own key pair, and stops it", async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), "kiln-s3-proc-"));
    dirs.push(dir);
    const s3 = await startS3Process({ dataDir: path.join(dir, "s3") });
    expect(s3.pid).not.toBe(process.pid);
    expect(await list(s3.endpoint, s3.accessKeyId, s3.secretAccessKey)).toBe(200);
    expect(await list(s3.endpoint, "S3RVER", "S3RVER")).toBe(403);
    await s3.stop();
    expect(() => process.kill(s3.pid, 0)).toThrow();
  });

  it("stock mode is s3rver as published, public key pair included", async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), "kiln-s3-proc-"));
    dirs.push(dir);
    const s3 = await startS3Process({ dataDir: path.join(dir, "s3"), stock: true });
    try {
      expect(s3.accessKeyId).toBe("S3RVER");
      expect(await list(s3.endpoint, "S3RVER", "S3RVER")).toBe(200);
    } finally {
      await s3.stop();
    }
  });
});
