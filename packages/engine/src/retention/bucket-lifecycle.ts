// Object-store lifecycle rules for what metadata cannot reach (seed 003 Q5, docs/adr/0036):
// multipart uploads nobody completed or aborted (a crash between create and record) are aborted
// after 7 days, and if versioning is ever on, noncurrent versions (what a delete leaves behind)
// expire after 1 day. Kiln never enables versioning. Applied by setup (scripts/up.ts, the test
// S3 server). s3rver implements neither lifecycle nor versioning: it answers NotImplemented, which
// is reported as "unsupported" (it keeps no versions and the GC aborts uploads itself there).
import {
  GetBucketLifecycleConfigurationCommand,
  GetBucketVersioningCommand,
  PutBucketLifecycleConfigurationCommand,
  type LifecycleRule,
  type S3Client,
} from "@aws-sdk/client-s3";
import { s3ErrorName } from "../artifacts/index.ts";

export const BUCKET_LIFECYCLE_RULES: LifecycleRule[] = [
  {
    ID: "kiln-abort-incomplete-multipart-7d",
    Status: "Enabled",
    Filter: { Prefix: "" },
    AbortIncompleteMultipartUpload: { DaysAfterInitiation: 7 },
  },
  {
    ID: "kiln-expire-noncurrent-versions-1d",
    Status: "Enabled",
    Filter: { Prefix: "" },
    NoncurrentVersionExpiration: { NoncurrentDays: 1 },
  },
];

export interface LifecycleOutcome {
  lifecycle: "applied" | "unsupported";
  /** The bucket's versioning as the store reports it. */
  versioning: "never_enabled" | "enabled" | "suspended" | "unsupported";
}

const UNSUPPORTED = new Set(["NotImplemented", "MethodNotAllowed"]);

export async function applyBucketLifecycle(s3: S3Client, bucket: string): Promise<LifecycleOutcome> {
  let lifecycle: LifecycleOutcome["lifecycle"] = "applied";
  try {
    await s3.send(
      new PutBucketLifecycleConfigurationCommand({
        Bucket: bucket,
        LifecycleConfiguration: { Rules: BUCKET_LIFECYCLE_RULES },
      }),
    );
    // Read back: a store that accepts the call but keeps nothing must not count as applied.
    const got = await s3.send(new GetBucketLifecycleConfigurationCommand({ Bucket: bucket }));
    const ids = new Set((got.Rules ?? []).map((r) => r.ID));
    if (!BUCKET_LIFECYCLE_RULES.every((r) => ids.has(r.ID))) lifecycle = "unsupported";
  } catch (e) {
    if (!UNSUPPORTED.has(s3ErrorName(e))) throw e;
    lifecycle = "unsupported";
  }
  let versioning: LifecycleOutcome["versioning"];
  try {
    const v = await s3.send(new GetBucketVersioningCommand({ Bucket: bucket }));
    versioning = v.Status === "Enabled" ? "enabled" : v.Status === "Suspended" ? "suspended" : "never_enabled";
  } catch (e) {
    if (!UNSUPPORTED.has(s3ErrorName(e))) throw e;
    versioning = "unsupported";
  }
  return { lifecycle, versioning };
}
