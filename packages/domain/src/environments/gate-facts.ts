import type { Role } from "../tenants/index.ts";
import type { PromotionKind } from "./environment-states.ts";

// What the decision service knows when it decides, gathered by the engine from the control
// plane's own records (never from the pipeline). Each fact may be unavailable (a timed-out query,
// an unreachable log): the gate that needs it then fails closed or open per the fail mode.

export type Fact<T> = { ok: true; value: T } | { ok: false; error: string };
export const known = <T>(value: T): Fact<T> => ({ ok: true, value });
export const unavailable = <T = never>(error: string): Fact<T> => ({ ok: false, error });

export interface RunFacts {
  status: string;
  outcome: string | null;
  trustClass: string;
  ref: string | null;
  jobs: { name: string; status: string; outcome: string | null }[];
}

export interface AttestationFacts {
  /** The DSSE signature verifies with a published attestor key (and the statement is valid SLSA). */
  signatureValid: boolean;
  signatureRule: string | null;
  /** sha256 digests the statement names for this artifact's name. */
  subjectDigests: string[];
  /** The envelope is the transparency log's leaf at its index. */
  inLog: boolean;
  /** The verifier's verdict so far (logged | verified | mismatch). */
  verifierState: string;
  builderId: string | null;
  /** What the signed statement's builder id says built it (readProvenanceTrust): production takes only "platform". */
  builderKind: "platform" | "self-hosted" | "untrusted" | "unknown";
  /** "trusted" only when the builder id, the build type and the parameters all say so (issue 28). */
  trustClass: string | null;
  sourceRef: string | null;
}

export interface ApprovalFact {
  userId: string;
  login: string;
  role: Role;
  decision: "approve" | "reject";
}

export interface PromotionFacts {
  kind: PromotionKind;
  environment: { name: string; production: boolean };
  requester: { userId: string | null; login: string | null };
  /**
   * Who authored the change, as member ids (issue 28): the member who triggered the producing run
   * (a personal token resolves to its member). null: an author Kiln cannot name as a member (an org
   * token, a schedule, a forge user who is no member), which separation of duties counts against
   * every approver. Separation of duties keeps them from approving it.
   */
  changeAuthors: (string | null)[];
  artifact: { generationId: string; name: string; digest: string };
  /** This Kiln's builder id prefix (`<public URL>/builders/`). */
  builderPrefix: string;
  run: Fact<RunFacts>;
  /** null: the artifact has no attestation. */
  attestation: Fact<AttestationFacts | null>;
  quarantined: Fact<boolean>;
  /** The digest's stays in the previous environment; null when there is no previous environment. */
  previous: Fact<{ name: string; stays: { from: Date; until: Date | null }[] } | null>;
  approvals: Fact<ApprovalFact[]>;
}
