// The attestor's use case (issue 17, ADR 0027): compose each statement from control-plane records,
// sign it outside any transaction, then in one transaction per batch record them, append them to
// the transparency log and queue their verification. Safe to run any number of times per job.
import { createHash } from "node:crypto";
import { sqlPool, type Db } from "@kiln/db";
import { composeProvenance, DomainError, utf8 } from "@kiln/domain";
import type { LogArchiveReader } from "../logs/index.ts";
import type { SqlPool } from "../shared/sql-pool.ts";
import { signStatement } from "./dsse-envelope.ts";
import { loadProvenanceBatch, type JobRef } from "./load-provenance.ts";
import { publishSigningKey } from "./attestation-keys.ts";
import type { AttestationSigner } from "./signer.ts";
import { COMMITMENT_KIND, commitmentLeaf, newCommitmentSalt } from "./tlog-commitment.ts";
import type { TlogPort } from "./tlog-port.ts";
import { writeAttestations, type AttestResult, type SignedAttestation } from "./write-attestations.ts";

export type { AttestResult };

export interface AttestorDeps {
  db: Db;
  logs: { pool: SqlPool; archive: LogArchiveReader };
  signer: AttestationSigner;
  tlog: TlogPort;
  /** The instance's public URL: names the builder and the invocation. */
  instanceUri: string;
}

/** A batch member's outcome: its result, or the error that failed this job (and only it). */
export type AttestOutcome = AttestResult | { kind: "failed"; error: Error };

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

/** One job (the API the tests and tools use): a batch of one, its failure thrown. */
export async function attestJob(d: AttestorDeps, ref: JobRef): Promise<AttestResult> {
  const [r] = await attestJobs(d, [ref]);
  if (!r) throw new Error("attestJobs returned nothing");
  if (r.kind === "failed") throw r.error;
  return r;
}

const errorOf = (e: unknown): Error => (e instanceof Error ? e : new Error(String(e)));

/**
 * Attests a batch of jobs: one outcome per ref, in order. Loading, signing and the write are each
 * one pass for the whole batch; a job whose records, statement or log entry fail gets its own
 * `failed` outcome and the rest go on (a write the database refuses is retried job by job, so only
 * the bad job fails). Duplicate refs (pg-boss redelivery) share one outcome.
 */
export async function attestJobs(d: AttestorDeps, refs: JobRef[]): Promise<AttestOutcome[]> {
  const keyOf = (r: JobRef) => `${r.jobId}:${r.epoch}`;
  const unique = [...new Map(refs.map((r) => [keyOf(r), r])).values()];
  const done = new Map<string, AttestOutcome>();
  const sql = sqlPool(d.db);

  const { rows: existing } = await sql.query<{ id: string; job_id: string }>({
    name: "attest-existing",
    text: "SELECT id, job_id FROM attestation WHERE job_id = ANY($1::uuid[])",
    values: [unique.map((r) => r.jobId)],
  });
  const already = new Map(existing.map((e) => [e.job_id, e.id]));
  const todo = unique.filter((r) => {
    const id = already.get(r.jobId);
    if (id) done.set(keyOf(r), { kind: "already", attestationId: id });
    return !id;
  });

  const signed: SignedAttestation[] = [];
  if (todo.length > 0) {
    const loaded = await loadProvenanceBatch(sql, d.logs, d.instanceUri, todo);
    await publishSigningKey(d.db, d.signer);
    for (const [i, ref] of todo.entries()) {
      const rec = loaded[i];
      if (rec === null || rec === undefined) done.set(keyOf(ref), { kind: "not_applicable" });
      else if (rec instanceof Error) done.set(keyOf(ref), { kind: "failed", error: rec });
      else {
        try {
          const s = await signStatement(d.signer, composeProvenance(rec.input));
          const id = attestationIdFor(ref.jobId, ref.epoch);
          // The public log gets a salted commitment, never the envelope (issue 28, ADR 0026).
          const salt = newCommitmentSalt();
          const entry = { kind: COMMITMENT_KIND, bytes: commitmentLeaf(salt, utf8(s.envelopeJson)), dedupeKey: id };
          // Checked before the batch's write: a statement the log refuses fails alone, honestly.
          const problem = d.tlog.entryProblem(entry);
          if (problem) throw new DomainError("TLOG.ENTRY_INVALID", `the statement of job ${ref.jobId}: ${problem}`);
          signed.push({ id, ref, rec, envelopeJson: s.envelopeJson, salt, entry });
        } catch (e) {
          done.set(keyOf(ref), { kind: "failed", error: errorOf(e) });
        }
      }
    }
  }

  if (signed.length > 0) {
    try {
      for (const [k, r] of await writeAttestations(sql, d.tlog, d.signer.keyId, signed)) done.set(k, r);
    } catch (batchError) {
      // One job's row the database refuses must not fail the others: write each alone.
      if (signed.length === 1) done.set(keyOf(signed[0]!.ref), { kind: "failed", error: errorOf(batchError) });
      else
        for (const s of signed) {
          try {
            for (const [k, r] of await writeAttestations(sql, d.tlog, d.signer.keyId, [s])) done.set(k, r);
          } catch (e) {
            done.set(keyOf(s.ref), { kind: "failed", error: errorOf(e) });
          }
        }
    }
  }
  return refs.map((r) => done.get(keyOf(r)) ?? { kind: "failed", error: new Error("no outcome") });
}
