// The S3 client factory shared by artifacts and logs. One client per process; callers pass the
// bucket with each command. Checksums are computed/validated only when an operation requires them:
// the SDK's default (always add CRC32 trailers) is not understood by every S3-compatible store, and
// Kiln verifies artifact bytes itself (SHA-256 read-back; docs/adr/0007-artifacts.md).
import { S3Client } from "@aws-sdk/client-s3";

export interface ObjectStoreConfig {
  /** e.g. http://127.0.0.1:4568 for a local s3rver/MinIO; undefined means AWS's regional endpoint. */
  endpoint?: string | undefined;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
}

export function createObjectStore(config: ObjectStoreConfig): S3Client {
  return new S3Client({
    region: config.region,
    ...(config.endpoint ? { endpoint: config.endpoint } : {}),
    // Path-style URLs work against every S3-compatible server and need no wildcard DNS.
    forcePathStyle: true,
    credentials: { accessKeyId: config.accessKeyId, secretAccessKey: config.secretAccessKey },
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED",
  });
}
