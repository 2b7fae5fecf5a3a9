// An S3-compatible store on loopback for `npm run up`, tests and benches: s3rver (filesystem-backed,
// in this process) with S3's multipart assembly (s3-multipart.ts) and a per-instance key pair that
// it alone accepts (s3-auth.ts).
import { mkdir } from "node:fs/promises";
import path from "node:path";
import S3rver from "s3rver";
import { once } from "./child-process.ts";
import { loadOrCreateS3Credentials, requireS3Credentials } from "./s3-auth.ts";
import { assembleMultipartLikeS3 } from "./s3-multipart.ts";

export interface S3Handle {
  endpoint: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
  bucket: string;
  stop(): Promise<void>;
}

export async function startS3(opts: { dataDir: string; port?: number; bucket: string }): Promise<S3Handle> {
  const directory = path.resolve(opts.dataDir);
  await mkdir(directory, { recursive: true });
  const creds = await loadOrCreateS3Credentials(directory);
  const server = new S3rver({
    address: "127.0.0.1",
    port: opts.port ?? 0, // s3rver reports the real port, so port 0 avoids the freePort race
    silent: true,
    directory,
    configureBuckets: [{ name: opts.bucket }], // idempotent: existing bucket contents are kept
  });
  assembleMultipartLikeS3(server);
  const forget = requireS3Credentials(server, creds);
  const { port } = await server.run();
  const stop = once(async () => {
    // close() waits for keep-alive sockets (e.g. an idle SDK client) to end; cut them instead.
    server.httpServer?.closeAllConnections();
    await server.close();
    forget();
  });
  return { endpoint: `http://127.0.0.1:${port}`, region: "us-east-1", ...creds, bucket: opts.bucket, stop };
}

/** What web and workers read to reach the store (apps/web and apps/workers env.ts). */
export function s3Env(s3: Omit<S3Handle, "stop">): Record<string, string> {
  return {
    S3_ENDPOINT: s3.endpoint,
    S3_REGION: s3.region,
    S3_ACCESS_KEY_ID: s3.accessKeyId,
    S3_SECRET_ACCESS_KEY: s3.secretAccessKey,
    KILN_S3_BUCKET: s3.bucket,
  };
}
