// Object storage for archived log segments, behind a two-method port so the archiver and readers
// don't care which S3-compatible server sits behind it. The S3 client comes from ../storage
// (shared with artifacts).
import { createHash } from "node:crypto";
import { GetObjectCommand, PutObjectCommand, type S3Client } from "@aws-sdk/client-s3";

export interface LogObjectStore {
  /** Writes the whole object; resolves only once the store has verified and kept it. */
  put(key: string, body: Uint8Array, contentType: string): Promise<void>;
  get(key: string): Promise<Uint8Array>;
}

export function s3LogStore(client: S3Client, bucket: string): LogObjectStore {
  return {
    async put(key, body, contentType) {
      // Content-MD5 makes the store reject a body that arrived damaged, before we delete the journal rows.
      const md5 = createHash("md5").update(body).digest("base64");
      await client.send(
        new PutObjectCommand({
          Bucket: bucket,
          Key: key,
          Body: body,
          ContentType: contentType,
          ContentMD5: md5,
          ContentLength: body.length,
        }),
      );
    },
    async get(key) {
      const r = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
      if (!r.Body) throw new Error(`object ${key} has no body`);
      return r.Body.transformToByteArray();
    },
  };
}
