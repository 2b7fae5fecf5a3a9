// The attestor's use case (issue 17, ADR 0027): compose the statement from control-plane records,
// sign it outside any transaction, then in one transaction record it, append it to the
// transparency log and queue its verification. Safe to run any number of times per job.
import { createHash } from "node:crypto";
import { withTx, type Db } from "@kiln/db";
import { composeProvenance, utf8 } from "@kiln/domain";
import type { LogArchiveReader } from "../logs/index.ts";
import type { SqlPool } from "../shared/sql-pool.ts";
import { enqueueOutbox } from "../shared/journal.ts";
import { signStatement } from "./dsse-envelope.ts";
import { loadProvenanceRecords } from "./load-provenance.ts";
import { publishSigningKey } from "./attestation-keys.ts";
import type { AttestationSigner } from "./signer.ts";
import type { TlogPort } from "./tlog-port.ts";

export interface AttestorDeps {
  db: Db;
  logs: { pool: SqlPool; archive: LogArchiveReader };
  signer: AttestationSigner;
  tlog: TlogPort;
  /** The instance's public URL: names the builder and the invocation. */
  instanceUri: string;
}

export type AttestResult =
  | { kind: "attested"; attestationId: string; tlogIndex: bigint }
  | { kind: "already"; attestationId: string }
  | { kind: "not_applicable" };

/**
 * The attestation id is derived from the job and its winning epoch, so every retry of the same
 * pg-boss job names the same log dedupe key; the advisory lock plus the existence check under it
 * make two concurrent handlers write one row and one leaf.
 */
export function attestationIdFor(jobId: string, epoch: number): string {
  const h = createHash("sha256").update(`kiln-attestation\0${jobId}\0${epoch}`).digest();
  h[6] = ((h[6] ?? 0) & 0x0f) | 0x50; // RFC 9562 name-based layout (version 5 style over SHA-256)
  h[8] = ((h[8] ?? 0) & 0x3f) | 0x80;
  const x = h.subarray(0, 16).toString("hex");
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20, 32)}`;
}

export async function attestJob(d: AttestorDeps, ref: { jobId: string; epoch: number }): Promise<AttestResult> {
  const id = attestationIdFor(ref.jobId, ref.epoch);
  const existing = await d.db.$queryRaw<{ id: string }[]>`SELECT id FROM attestation WHERE job_id = ${ref.jobId}::uuid`;
  if (existing[0]) return { kind: "already", attestationId: existing[0].id };
  const rec = await loadProvenanceRecords(d.db, d.logs, d.instanceUri, ref);
  if (!rec) return { kind: "not_applicable" };
  await publishSigningKey(d.db, d.signer);
  const signed = await signStatement(d.signer, composeProvenance(rec.input));
  return withTx(d.db, "attest-job", async (tx) => {
    await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtextextended(${`attest:${ref.jobId}`}, 0))`;
    const again = await tx.$queryRaw<{ id: string }[]>`SELECT id FROM attestation WHERE job_id = ${ref.jobId}::uuid`;
    if (again[0]) return { kind: "already" as const, attestationId: again[0].id };
    await tx.$executeRaw`
      INSERT INTO attestation (id, org_id, run_id, job_id, attempt_id, epoch, commit_sha, key_id, envelope)
      VALUES (${id}::uuid, ${rec.orgId}::uuid, ${rec.runId}::uuid, ${ref.jobId}::uuid, ${rec.attemptId}::uuid, ${ref.epoch},
              ${rec.input.run.commitSha}, ${d.signer.keyId}, ${signed.envelopeJson})`;
    await tx.$executeRaw`
      INSERT INTO attestation_subject (attestation_id, generation_id, name, sha256)
      SELECT ${id}::uuid, g, n, s FROM unnest(${rec.subjects.map((x) => x.generationId)}::uuid[],
        ${rec.subjects.map((x) => x.name)}::text[], ${rec.subjects.map((x) => x.sha256)}::text[]) AS t(g, n, s)`;
    await enqueueOutbox(tx, "attestation.verify", { attestationId: id }, { dedupeKey: id });
    // Last: the append takes the log's one-writer lock, held until this transaction commits.
    const { index } = await d.tlog.append(tx, { kind: "dsse", bytes: utf8(signed.envelopeJson), dedupeKey: id });
    await tx.$executeRaw`UPDATE attestation SET tlog_index = ${index} WHERE id = ${id}::uuid`;
    return { kind: "attested" as const, attestationId: id, tlogIndex: index };
  });
}
