// Shredding test support: an artifact uploaded sealed the way the host agent does it (each part
// through PartSealStream to its presigned URL, recorded with its sealed size and MD5), then bound by
// completing the attempt of a finished one-job run.
import { randomUUID } from "node:crypto";
import { finished } from "node:stream/promises";
import type { Db } from "@kiln/db";
import { sealedParts } from "@kiln/domain";
import type { ArtifactStore } from "../../src/artifacts/artifact-context.ts";
import { finalizeUpload } from "../../src/artifacts/finalize-upload.ts";
import { openUpload } from "../../src/artifacts/open-upload.ts";
import { recordPart } from "../../src/artifacts/record-part.ts";
import { completeAttempt } from "../../src/attempts/complete-attempt.ts";
import { claimJob } from "../../src/dispatch/claim-job.ts";
import { headerFor, PartSealStream } from "@kiln/chunk-cipher";
import { md5Of, putPart, sha256 } from "../artifacts/support.ts";
import { def, newSession, seedFrozenRun, TEST_CFG, type Tenant } from "../support.ts";

const PUBLISH_ONE = `version: 1
jobs:
  - name: build
    steps: [make]
    artifacts:
      publish:
        - name: app
          path: out/app
`;

/** A finished run whose one job uploaded `data` sealed (`store.shred` must be set) and bound it. */
export async function sealedShreddedArtifact(
  db: Db,
  store: ArtifactStore,
  tenant: Tenant,
  data: Buffer,
): Promise<string> {
  const session = await newSession(db, tenant);
  const runId = await seedFrozenRun(db, tenant, def(PUBLISH_ONE), "trusted", "refs/heads/topic");
  const r = await claimJob(db, TEST_CFG, { sessionId: session, claimRequestId: randomUUID() });
  if (r.kind !== "claimed" || r.ticket.runId !== runId) throw new Error(`claim: ${r.kind}`);
  const claims = { attemptId: r.ticket.attemptId, jobId: r.ticket.jobId, epoch: r.ticket.epoch };
  const s = await openUpload(db, store, claims, {
    name: "app",
    sizeBytes: data.length,
    sha256: sha256(data),
    format: "file",
    seal: true,
  });
  const seal = s.seal;
  if (!seal) throw new Error("the session is not sealed");
  const header = headerFor(seal.keyId, seal.chunkSize, seal.salt);
  const layouts = sealedParts(data.length, { partSize: s.partSize, partCount: s.partCount }, seal.chunkSize);
  for (const p of s.parts) {
    const layout = layouts[p.partNumber - 1];
    if (!layout || !p.url) throw new Error(`part ${p.partNumber}`);
    const ps = new PartSealStream(seal.key, header, layout);
    const out: Buffer[] = [];
    ps.on("data", (c: Buffer) => out.push(c));
    ps.end(data.subarray(p.offset, p.offset + p.size));
    await finished(ps);
    const body = Buffer.concat(out);
    const etag = await putPart(p.url, body);
    await recordPart(db, claims, s.generationId, {
      partNumber: p.partNumber,
      sizeBytes: body.length,
      sha256: sha256(body),
      etag,
      md5: md5Of(body),
      tries: 1,
    });
  }
  await finalizeUpload(db, store, claims, s.generationId);
  await completeAttempt(db, TEST_CFG, { ...claims, outcome: "success", sandboxDestroyed: true });
  return s.generationId;
}
