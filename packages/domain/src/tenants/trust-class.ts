// Trust class is computed once at admission from the event and the org's membership records, never
// from anything in the workflow or the commit, and can never be raised afterwards (seed 002).
export const TRUST_CLASSES = ["trusted", "untrusted"] as const;
export type TrustClass = (typeof TRUST_CLASSES)[number];
export const ROLES = ["admin", "member", "auditor"] as const;
export type Role = (typeof ROLES)[number];

export type AdmissionEvent =
  | { kind: "push"; senderIsMember: boolean }
  | { kind: "pull_request"; senderIsMember: boolean; headRepoFullName: string | null; baseRepoFullName: string }
  | { kind: "manual"; callerRole: Role }
  | { kind: "retry"; parentTrustClass: TrustClass }
  /**
   * A schedule's slot, run at the default branch's head (ADR 0031). Trusted: the commit is already
   * on the branch the org protects, the slot is fired by Kiln and not by any sender, and a schedule
   * exists only because a member or admin added it or a trusted default-branch run recorded it.
   */
  | { kind: "schedule"; recordedByTrustedSource: boolean }
  /**
   * A deploy run (issue 18, ADR 0033), started by Kiln after a gated pointer move. It inherits the
   * class of the run that built the promoted artifact, so promoting can never raise trust.
   */
  | { kind: "deploy"; sourceTrustClass: TrustClass };

export function computeTrustClass(e: AdmissionEvent): TrustClass {
  switch (e.kind) {
    case "push":
      return e.senderIsMember ? "trusted" : "untrusted";
    case "pull_request": {
      // A fork's head (or a deleted head repo) is outside the org's control whoever opened it.
      const sameRepo = e.headRepoFullName !== null && e.headRepoFullName === e.baseRepoFullName;
      return sameRepo && e.senderIsMember ? "trusted" : "untrusted";
    }
    case "manual":
      return e.callerRole === "admin" || e.callerRole === "member" ? "trusted" : "untrusted";
    case "retry":
      // A retry inherits the parent's class: it may never be raised by re-running.
      return e.parentTrustClass;
    case "schedule":
      return e.recordedByTrustedSource ? "trusted" : "untrusted";
    case "deploy":
      return e.sourceTrustClass;
  }
}

export function canTrigger(role: Role): boolean {
  return role === "admin" || role === "member";
}
