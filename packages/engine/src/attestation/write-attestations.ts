// The attestor's write (issue 17, ADR 0027 "Batches"): a batch of signed statements in one
// transaction on plain node-postgres (a path on every successful job, ADR 0015): the per-job
// locks, the existence check under them, the rows, their subjects and verify-outbox rows, then the
// log append of every new statement as the last writes (the sequencer lock is held from there to
// the commit, once per batch instead of once per job).
import { withTx } from "@kiln/db";
import type { OutboxTopic } from "../shared/outbox-topics.ts";
import type { SqlPool } from "../shared/sql-pool.ts";
import type { ProvenanceRecords, JobRef } from "./load-provenance.ts";
import type { TlogAppend, TlogPort } from "./tlog-port.ts";

export type AttestResult =
  | { kind: "attested"; attestationId: string; tlogIndex: bigint }
  | { kind: "already"; attestationId: string }
  | { kind: "not_applicable" };

export interface SignedAttestation {
  id: string;
  ref: JobRef;
  rec: ProvenanceRecords;
  envelopeJson: string;
  /** The leaf commitment's salt (tlog-commitment.ts): private, in the bundle for members only. */
  salt: Uint8Array;
  entry: TlogAppend;
}

/** Outcomes keyed `${jobId}:${epoch}`. Throws when the database refuses the batch (caller splits it). */
export async function writeAttestations(
  sql: SqlPool,
  tlog: TlogPort,
  keyId: string,
  batch: SignedAttestation[],
): Promise<Map<string, AttestResult>> {
  return withTx(sql, "attest-jobs", async (c) => {
    const out = new Map<string, AttestResult>();
    const jobIds = batch.map((s) => s.ref.jobId);
    // Sorted, so two batches sharing jobs (a redelivered pg-boss job) cannot deadlock; the sorted
    // subquery is not flattened, so the locks are taken in that order.
    await c.query({
      name: "attest-lock-jobs",
      text: `SELECT pg_advisory_xact_lock(k) FROM (
               SELECT DISTINCT hashtextextended('attest:' || j::text, 0) AS k FROM unnest($1::uuid[]) AS j ORDER BY 1) s`,
      values: [jobIds],
    });
    const { rows: again } = await c.query<{ id: string; job_id: string }>({
      name: "attest-existing",
      text: "SELECT id, job_id FROM attestation WHERE job_id = ANY($1::uuid[])",
      values: [jobIds],
    });
    const taken = new Map(again.map((a) => [a.job_id, a.id]));
    const fresh: SignedAttestation[] = [];
    for (const s of batch) {
      const id = taken.get(s.ref.jobId);
      if (id) out.set(`${s.ref.jobId}:${s.ref.epoch}`, { kind: "already", attestationId: id });
      else fresh.push(s);
    }
    if (fresh.length === 0) return out;

    const subjects = fresh.flatMap((s) => s.rec.subjects.map((x) => ({ id: s.id, ...x })));
    await c.query({
      name: "attest-insert-2",
      text: `WITH a AS (
               INSERT INTO attestation (id, org_id, run_id, job_id, attempt_id, epoch, commit_sha, key_id, envelope, tlog_salt)
               SELECT id, org_id, run_id, job_id, attempt_id, epoch, commit_sha, $8, envelope, decode(salt, 'base64')
               FROM unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::uuid[], $5::uuid[], $6::int[], $7::text[], $9::text[], $14::text[])
                 AS t(id, org_id, run_id, job_id, attempt_id, epoch, commit_sha, envelope, salt)
               RETURNING id),
             s AS (
               INSERT INTO attestation_subject (attestation_id, generation_id, name, sha256)
               SELECT * FROM unnest($10::uuid[], $11::uuid[], $12::text[], $13::text[]) RETURNING 1),
             o AS (
               INSERT INTO outbox (topic, payload, dedupe_key)
               SELECT $15::text, jsonb_build_object('attestationId', id), id::text FROM a RETURNING 1)
           SELECT (SELECT count(*) FROM s) AS subjects, (SELECT count(*) FROM o) AS queued,
                  pg_notify('kiln_outbox', $15::text)`,
      values: [
        fresh.map((s) => s.id),
        fresh.map((s) => s.rec.orgId),
        fresh.map((s) => s.rec.runId),
        fresh.map((s) => s.ref.jobId),
        fresh.map((s) => s.rec.attemptId),
        fresh.map((s) => s.ref.epoch),
        fresh.map((s) => s.rec.input.run.commitSha),
        keyId,
        fresh.map((s) => s.envelopeJson),
        subjects.map((x) => x.id),
        subjects.map((x) => x.generationId),
        subjects.map((x) => x.name),
        subjects.map((x) => x.sha256),
        fresh.map((s) => Buffer.from(s.salt).toString("base64")),
        "attestation.verify" satisfies OutboxTopic,
      ],
    });
    // Last: the append takes the log's one-writer lock, held until this transaction commits.
    const indices = await tlog.append(
      c,
      fresh.map((s) => s.entry),
    );
    const set = await c.query({
      name: "attest-set-index",
      text: `UPDATE attestation a SET tlog_index = w.idx
             FROM unnest($1::uuid[], $2::bigint[]) AS w(id, idx) WHERE a.id = w.id`,
      values: [fresh.map((s) => s.id), indices.map((i) => String(i.index))],
    });
    if (set.rowCount !== fresh.length) throw new Error(`set ${set.rowCount} log indices for ${fresh.length}`);
    fresh.forEach((s, i) =>
      out.set(`${s.ref.jobId}:${s.ref.epoch}`, {
        kind: "attested",
        attestationId: s.id,
        tlogIndex: indices[i]!.index,
      }),
    );
    return out;
  });
}
