// Errors the artifact read paths share (restore grants, API downloads).
import { DomainError } from "@kiln/domain";

/** The stored bytes disagree with their signed provenance: kept for the audit, never handed out. */
export function quarantined(reason: string): DomainError {
  return new DomainError(
    "ARTIFACT.QUARANTINED",
    `this artifact is quarantined (${reason}): its stored bytes do not match its attestation`,
    { reason },
  );
}
