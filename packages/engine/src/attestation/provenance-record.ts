// The auditor's provenance record (issue 17): the decoded statement, its signature verified here
// on the server with the published keys, and its log entry's inclusion verified against the
// latest signed checkpoint. Every check reports what it found; nothing is assumed from state.
import type { Db } from "@kiln/db";
import { DomainError, fromBase64Any, utf8 } from "@kiln/domain";
import { bundleForAttestation, type AttestationBundle, type BundleRow } from "./attestation-bundle.ts";
import { verifyAttestationEnvelope } from "./dsse-envelope.ts";
import { listAttestationKeys } from "./attestation-keys.ts";
import { attestationLeaf } from "./tlog-commitment.ts";
import { findAttestations, type AttestationSummary } from "./find-attestations.ts";
import type { TlogPort } from "./tlog-port.ts";

export interface ProvenanceRecord {
  summary: AttestationSummary;
  statement: unknown;
  signature: { verified: boolean; key_id: string; failed_rule: string | null };
  log: {
    index: string;
    leaf_matches: boolean;
    checkpoint_verified: boolean;
    inclusion_verified: boolean;
    tree_size: string | null;
  };
  bundle: AttestationBundle;
}

export async function getProvenanceRecord(
  db: Db,
  tlog: TlogPort,
  input: { orgId: string; attestationId: string },
): Promise<ProvenanceRecord> {
  const rows = await db.$queryRaw<(BundleRow & { run_id: string })[]>`
    SELECT id, key_id, envelope, tlog_salt, tlog_index, state, run_id FROM attestation
    WHERE id = ${input.attestationId}::uuid AND org_id = ${input.orgId}::uuid`;
  const a = rows[0];
  if (!a) throw new DomainError("ATTESTATION.NOT_FOUND", "attestation not found");
  const summary = (await findAttestations(db, input.orgId, { runId: a.run_id }, 1000)).find((s) => s.id === a.id);
  if (!summary) throw new DomainError("ATTESTATION.NOT_FOUND", "attestation not found");

  const envelope = JSON.parse(a.envelope) as { payload: string };
  const keys = (await listAttestationKeys(db)).map((k) => ({ keyId: k.key_id, spkiPem: k.spki_pem }));
  const sig = verifyAttestationEnvelope(envelope, keys);
  const payload = fromBase64Any(envelope.payload);
  const statement: unknown = payload ? JSON.parse(new TextDecoder().decode(payload)) : null;

  const leaf = await tlog.entry(db, a.tlog_index);
  // The leaf this row was logged under: its salted commitment (or, before issue 28, the envelope).
  const mine = attestationLeaf(utf8(a.envelope), a.tlog_salt ? new Uint8Array(a.tlog_salt) : null);
  const leafMatches = !!leaf && leaf.length === mine.length && leaf.every((b, i) => b === mine[i]);
  const inc = await tlog.inclusionInLatest(db, a.tlog_index);
  const cp = inc ? tlog.verifyCheckpoint(inc.checkpoint, await tlog.verifierKey(db)) : null;
  const checkpointOk = !!cp && !!inc && cp.rootHash === inc.rootHash && cp.size === inc.treeSize;
  return {
    summary,
    statement,
    signature: { verified: sig.ok, key_id: a.key_id, failed_rule: sig.ok ? null : sig.rule },
    log: {
      index: String(a.tlog_index),
      leaf_matches: leafMatches,
      checkpoint_verified: checkpointOk,
      inclusion_verified: checkpointOk && leafMatches && !!inc && tlog.verifyInclusion(tlog.leafHash(mine), inc),
      tree_size: inc ? String(inc.treeSize) : null,
    },
    bundle: await bundleForAttestation(db, tlog, a, summary.subjects[0]?.artifact_id ?? null),
  };
}
