// GET /v1/artifacts/{artifact_id}/attestation (issue 17): the Sigstore bundle v0.3 (public-key
// hint, DSSE envelope) that @sigstore/verify accepts with the published key, wrapped with the
// Kiln transparency-log evidence: index, leaf hash, inclusion proof, and the checkpoint it
// verifies against. The bundle has no Rekor entries: Kiln's log is not Rekor, so its evidence
// travels beside the bundle and `kiln verify` checks both (docs/attestation.md).
import type { Db } from "@kiln/db";
import { DomainError, toBase64, utf8, type DsseEnvelope } from "@kiln/domain";
import { attestationLeaf } from "./tlog-commitment.ts";
import type { TlogPort } from "./tlog-port.ts";

export const SIGSTORE_BUNDLE_V03 = "application/vnd.dev.sigstore.bundle.v0.3+json";

export interface SigstoreBundleV03 {
  mediaType: typeof SIGSTORE_BUNDLE_V03;
  verificationMaterial: {
    publicKey: { hint: string };
    tlogEntries: never[];
    timestampVerificationData: { rfc3161Timestamps: never[] };
  };
  dsseEnvelope: DsseEnvelope;
}

export interface AttestationBundle {
  attestation_id: string;
  artifact_id: string | null;
  state: string;
  bundle: SigstoreBundleV03;
  transparency_log: {
    log_index: string;
    leaf_hash: string;
    /**
     * Base64 of the leaf commitment's salt (ADR 0026, amended by issue 28): the leaf is
     * `tlog-commitment.ts`'s commitment to the envelope under it. Null for an entry logged before
     * issue 28, whose leaf is the envelope itself. Private: whoever holds it can tie the public
     * leaf to this envelope.
     */
    leaf_salt: string | null;
    /** Null until the first checkpoint covering the entry is signed (within seconds). */
    inclusion_proof: {
      log_index: string;
      tree_size: string;
      root_hash: string;
      hashes: string[];
      checkpoint: string;
    } | null;
  };
}

export function toSigstoreBundle(envelope: DsseEnvelope, keyId: string): SigstoreBundleV03 {
  return {
    mediaType: SIGSTORE_BUNDLE_V03,
    verificationMaterial: {
      publicKey: { hint: keyId },
      tlogEntries: [],
      timestampVerificationData: { rfc3161Timestamps: [] },
    },
    dsseEnvelope: envelope,
  };
}

/** An attestation row as the bundle needs it. */
export interface BundleRow {
  id: string;
  key_id: string;
  envelope: string;
  tlog_salt: Uint8Array | null;
  tlog_index: bigint;
  state: string;
}

export async function bundleForAttestation(
  db: Db,
  tlog: TlogPort,
  a: BundleRow,
  artifactId: string | null,
): Promise<AttestationBundle> {
  const salt = a.tlog_salt ? new Uint8Array(a.tlog_salt) : null;
  const leaf = attestationLeaf(utf8(a.envelope), salt);
  const inc = await tlog.inclusionInLatest(db, a.tlog_index);
  return {
    attestation_id: a.id,
    artifact_id: artifactId,
    state: a.state,
    bundle: toSigstoreBundle(JSON.parse(a.envelope) as DsseEnvelope, a.key_id),
    transparency_log: {
      log_index: String(a.tlog_index),
      leaf_hash: toBase64(tlog.leafHash(leaf)),
      leaf_salt: salt ? toBase64(salt) : null,
      inclusion_proof: inc
        ? {
            log_index: String(inc.index),
            tree_size: String(inc.treeSize),
            root_hash: inc.rootHash,
            hashes: inc.hashes,
            checkpoint: inc.checkpoint,
          }
        : null,
    },
  };
}

/** The artifact's attestation, scoped to the caller's org in the query; another org's is a 404. */
export async function attestationBundleForArtifact(
  db: Db,
  tlog: TlogPort,
  input: { orgId: string; artifactId: string },
): Promise<AttestationBundle> {
  const rows = await db.$queryRaw<BundleRow[]>`
    SELECT a.id, a.key_id, a.envelope, a.tlog_salt, a.tlog_index, a.state
    FROM attestation_subject s JOIN attestation a ON a.id = s.attestation_id
    WHERE s.generation_id = ${input.artifactId}::uuid AND a.org_id = ${input.orgId}::uuid`;
  const a = rows[0];
  if (!a) throw new DomainError("ATTESTATION.NOT_FOUND", "no attestation for this artifact (yet)");
  return bundleForAttestation(db, tlog, a, input.artifactId);
}
