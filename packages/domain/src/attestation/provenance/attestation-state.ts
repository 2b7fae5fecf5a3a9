// What the listing, the run page and the auditor views call an artifact's attestation state.
/** The attestation row's own state (its CHECK constraint): logged, then verified or mismatch. */
export const ATTESTATION_ROW_STATES = ["logged", "verified", "mismatch"] as const;
/** The signing algorithms attestation keys may have (attestation_key.algorithm). */
export const ATTESTATION_ALGORITHMS = ["ecdsa-p256-sha256"] as const;
export type AttestationState = "pending" | "logged" | "verified" | "quarantined" | "none";

/**
 * quarantined beats everything (a mismatch is never hidden behind an older good check); an
 * artifact of a successful job with no attestation row yet is pending; a job that did not succeed
 * has none.
 */
export function attestationStateOf(x: {
  jobSucceeded: boolean;
  attestation: "logged" | "verified" | "mismatch" | null;
  quarantined: boolean;
}): AttestationState {
  if (x.quarantined || x.attestation === "mismatch") return "quarantined";
  if (x.attestation) return x.attestation;
  return x.jobSucceeded ? "pending" : "none";
}
