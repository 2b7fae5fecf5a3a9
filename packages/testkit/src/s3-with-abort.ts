// s3rver 3.7.1 answers AbortMultipartUpload with 405 and accepts parts for upload ids it never
// issued, so "the collector aborted the upload" could not be observed against it. This starts the
// same s3rver (same filesystem store as @kiln/testkit's startS3) with those two S3 behaviours added
// in front of its router: DELETE ?uploadId removes the upload, and part/complete requests for an
// unknown upload answer 404 NoSuchUpload, as S3 does (see ADR 0007). Like startS3 it accepts only
// its own key pair.
import { existsSync } from "node:fs";
import { mkdir, rm } from "node:fs/promises";
import type { IncomingMessage, ServerResponse } from "node:http";
import path from "node:path";
import S3rver from "s3rver";
import { loadOrCreateS3Credentials, requireS3Credentials, type S3Credentials } from "./s3-auth.ts";

export interface S3WithAbort extends S3Credentials {
  endpoint: string;
  region: string;
  bucket: string;
  /** Where s3rver keeps in-progress multipart uploads of `bucket`. */
  uploadDir(uploadId: string): string;
  stop(): Promise<void>;
}

type KoaCtx = {
  req: IncomingMessage;
  res: ServerResponse;
  method: string;
  path: string;
  query: Record<string, string | undefined>;
  status: number;
  body: unknown;
  type: string;
};
type KoaLike = { middleware: ((ctx: KoaCtx, next: () => Promise<void>) => Promise<void>)[] };

export async function startS3WithAbort(opts: { dataDir: string; bucket: string }): Promise<S3WithAbort> {
  const directory = path.resolve(opts.dataDir);
  await mkdir(directory, { recursive: true });
  const creds = await loadOrCreateS3Credentials(directory);
  const server = new S3rver({
    address: "127.0.0.1",
    port: 0,
    silent: true,
    directory,
    configureBuckets: [{ name: opts.bucket }],
  });
  const uploadDir = (id: string) => path.join(directory, opts.bucket, "._S3rver_uploads", id);
  const noSuchUpload = (ctx: KoaCtx) => {
    ctx.status = 404;
    ctx.type = "application/xml";
    ctx.body = `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>NoSuchUpload</Code><Message>The specified upload does not exist.</Message></Error>`;
  };
  (server as unknown as KoaLike).middleware.unshift(async (ctx, next) => {
    const id = ctx.query.uploadId;
    if (!id || !/^[0-9a-f]+$/.test(id) || !ctx.path.startsWith(`/${opts.bucket}/`)) return next();
    const exists = existsSync(uploadDir(id));
    if (ctx.method === "DELETE") {
      if (!exists) return noSuchUpload(ctx);
      await rm(uploadDir(id), { recursive: true, force: true });
      ctx.status = 204;
      ctx.body = "";
      return;
    }
    if (!exists && (ctx.method === "PUT" || ctx.method === "POST")) {
      ctx.req.resume();
      return noSuchUpload(ctx);
    }
    return next();
  });
  const forget = requireS3Credentials(server, creds);
  const { port } = await server.run();
  return {
    endpoint: `http://127.0.0.1:${port}`,
    region: "us-east-1",
    ...creds,
    bucket: opts.bucket,
    uploadDir,
    stop: async () => {
      server.httpServer?.closeAllConnections();
      await server.close();
      forget();
    },
  };
}
