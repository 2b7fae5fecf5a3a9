// Public API of the attestation capability (issue 17, docs/adr/0027-control-plane-attestor.md).
export { ATTESTATION_ALGORITHM, keyIdOfSpki, loadFileSigner, type AttestationSigner } from "./signer.ts";
export { verifyDsseSignature, verifyEcdsaP256, type SigEncoding } from "./ecdsa-verify.ts";
export { signStatement, verifyAttestationEnvelope, type SignedStatement, type TrustedKey } from "./dsse-envelope.ts";
export {
  attestJob,
  attestJobs,
  attestationIdFor,
  type AttestorDeps,
  type AttestOutcome,
  type AttestResult,
} from "./attest-job.ts";
export { verifyAttestation, type VerifyResult } from "./verify-attestation.ts";
export { listAttestationKeys, publishSigningKey, type AttestationKeyView } from "./attestation-keys.ts";
export {
  attestationBundleForArtifact,
  toSigstoreBundle,
  SIGSTORE_BUNDLE_V03,
  type AttestationBundle,
  type SigstoreBundleV03,
} from "./attestation-bundle.ts";
export {
  findAttestations,
  listQuarantines,
  type AttestationQuery,
  type AttestationSummary,
  type QuarantineAlert,
} from "./find-attestations.ts";
export { getProvenanceRecord, type ProvenanceRecord } from "./provenance-record.ts";
export type { TlogInclusion, TlogPort } from "./tlog-port.ts";
export { engineTlog } from "./tlog-adapter.ts";
export { listRunTransitions, type TransitionView } from "./run-history.ts";
export { verifyOffline, type OfflineInput, type OfflineResult } from "./verify-offline.ts";

// The transparency log (./tlog, ADR 0026).
export * from "./tlog/index.ts";
// What the public log holds for an attestation (issue 28): a salted commitment (tlog-commitment.ts).
export { attestationLeaf, commitmentLeaf, PUBLICLY_WITHHELD_KINDS } from "./tlog-commitment.ts";
export { attestationBundleForLogIndex, setProvenanceVisibility } from "./provenance-access.ts";
