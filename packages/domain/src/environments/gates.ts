import type { ApprovalFact, PromotionFacts } from "./gate-facts.ts";
import { describeWindow, inWindow } from "./freeze-window.ts";
import { isProduction, type GateKind, type GatePolicy } from "./policy-schema.ts";
import { refAllowed } from "./ref-pattern.ts";

// One evaluator per gate kind. Each answers a status and one machine-readable reason; a fact it
// needs that is unavailable answers "unavailable" and decide() applies the fail mode.

export type GateStatus = "pass" | "fail" | "pending" | "unavailable" | "skipped" | "overridden";

export interface GateResult {
  gate: GateKind | "policy";
  status: GateStatus;
  code: string;
  message: string;
}

type Gates = GatePolicy["gates"];
const r = (gate: GateResult["gate"], status: GateStatus, code: string, message: string): GateResult => ({
  gate,
  status,
  code,
  message,
});
const down = (gate: GateKind, what: string, f: { ok: false; error: string }) =>
  r(gate, "unavailable", "GATE.UNAVAILABLE", `${what} could not be read: ${f.error}`);

export function requiredOutcomes(f: PromotionFacts): GateResult {
  if (!f.run.ok) return down("required_outcomes", "the producing run", f.run);
  const run = f.run.value;
  if (run.status !== "completed" || run.outcome !== "success")
    return r(
      "required_outcomes",
      "fail",
      "OUTCOMES.RUN_NOT_SUCCEEDED",
      `the producing run is ${run.status}${run.outcome ? ` (${run.outcome})` : ""}, not a success`,
    );
  const bad = run.jobs.filter((j) => j.status !== "completed" || j.outcome !== "success").map((j) => j.name);
  if (bad.length)
    return r("required_outcomes", "fail", "OUTCOMES.JOB_NOT_SUCCEEDED", `jobs not succeeded: ${bad.join(", ")}`);
  return r("required_outcomes", "pass", "OUTCOMES.OK", `the run and its ${run.jobs.length} jobs succeeded`);
}

export function provenance(f: PromotionFacts, g: NonNullable<Gates["provenance"]>): GateResult {
  const P = "provenance";
  if (!f.quarantined.ok) return down(P, "the quarantine list", f.quarantined);
  if (f.quarantined.value)
    return r(
      P,
      "fail",
      "PROVENANCE.QUARANTINED",
      "the artifact is quarantined: its bytes no longer match its attestation",
    );
  if (!f.attestation.ok) return down(P, "the attestation", f.attestation);
  const a = f.attestation.value;
  if (!a) return r(P, "fail", "PROVENANCE.MISSING", "the artifact has no attestation");
  if (!a.signatureValid)
    return r(
      P,
      "fail",
      "PROVENANCE.SIGNATURE_INVALID",
      `the attestation does not verify (${a.signatureRule ?? "signature"})`,
    );
  if (!a.subjectDigests.includes(f.artifact.digest))
    return r(
      P,
      "fail",
      "PROVENANCE.SUBJECT_MISMATCH",
      `the attestation's subject ${f.artifact.name} is not sha256:${f.artifact.digest}`,
    );
  if (!a.inLog) return r(P, "fail", "PROVENANCE.NOT_IN_LOG", "the attestation is not the transparency log's entry");
  if (a.verifierState === "mismatch")
    return r(P, "fail", "PROVENANCE.VERIFY_FAILED", "the verifier found the stored bytes or log entry do not match");
  if (!a.builderId?.startsWith(f.builderPrefix))
    return r(P, "fail", "PROVENANCE.FOREIGN_BUILDER", `builder ${a.builderId ?? "(none)"} is not this Kiln`);
  const production = isProduction(f.environment);
  // Production takes only trusted runs, whatever the policy says (issue 28).
  if ((production || (g.require_trusted ?? true)) && a.trustClass !== "trusted")
    return r(
      P,
      "fail",
      "PROVENANCE.UNTRUSTED_RUN",
      `the producing run was ${a.trustClass ?? "of unknown trust"}, not trusted`,
    );
  // ...and only what the platform's own hosts built: an org's self-hosted runner says what it likes
  // about its isolation, so its builds are never the platform builder's (issue 28, ADR 0032).
  const platform = ["process", "microvm"].some((c) => a.builderId === `${f.builderPrefix}${c}`);
  if (production && (a.builderKind !== "platform" || !platform))
    return r(
      P,
      "fail",
      "PROVENANCE.NOT_PLATFORM_BUILDER",
      `production takes builds of the platform's own hosts only; builder ${a.builderId ?? "(none)"} is ${a.builderKind === "self-hosted" ? "an org's self-hosted runner" : "not the platform builder"}`,
    );
  if (g.source_refs && !refAllowed(a.sourceRef, g.source_refs))
    return r(
      P,
      "fail",
      "PROVENANCE.SOURCE_REF_NOT_ALLOWED",
      `attested ref ${a.sourceRef ?? "(none)"} matches no allowed pattern`,
    );
  return r(
    P,
    "pass",
    "PROVENANCE.OK",
    `attested by this Kiln, in the log${a.verifierState === "verified" ? ", verified" : ""}`,
  );
}

export function previousEnvironment(
  f: PromotionFacts,
  g: NonNullable<Gates["previous_environment"]>,
  now: Date,
): GateResult {
  const P = "previous_environment";
  if (!f.previous.ok) return down(P, "the previous environment's history", f.previous);
  const prev = f.previous.value;
  if (!prev) return r(P, "unavailable", "GATE.UNAVAILABLE", "the environment comes after no environment");
  if (prev.stays.length === 0)
    return r(
      P,
      "fail",
      "PREVIOUS.NOT_DEPLOYED",
      `sha256:${f.artifact.digest.slice(0, 12)} has never been in ${prev.name}`,
    );
  const soakMs = g.soak_seconds * 1000;
  const longest = Math.max(...prev.stays.map((s) => (s.until ?? now).getTime() - s.from.getTime()));
  if (longest < soakMs)
    return r(
      P,
      "fail",
      "PREVIOUS.SOAKING",
      `in ${prev.name} for ${Math.floor(longest / 1000)}s of the ${g.soak_seconds}s soak`,
    );
  return r(P, "pass", "PREVIOUS.OK", `in ${prev.name}${g.soak_seconds ? ` for at least ${g.soak_seconds}s` : ""}`);
}

/** Why this member's approval does not count (null when it does). */
export function approvalIneligibility(
  f: Pick<PromotionFacts, "requester" | "changeAuthors">,
  g: NonNullable<Gates["approvals"]>,
  a: Pick<ApprovalFact, "userId" | "login" | "role">,
): { code: "APPROVAL.SEPARATION_OF_DUTIES" | "APPROVAL.NOT_ELIGIBLE"; message: string } | null {
  // By person (issue 28): member ids, never logins or actor strings; a requester or author Kiln
  // cannot name as a member might be this approver, so it counts against them (fails closed).
  if (g.separation_of_duties ?? true) {
    if (f.requester.userId === null)
      return {
        code: "APPROVAL.SEPARATION_OF_DUTIES",
        message: "the promotion's requester is not a known member, so no approval can be told apart from it",
      };
    if (a.userId === f.requester.userId)
      return { code: "APPROVAL.SEPARATION_OF_DUTIES", message: "the requester of a promotion cannot approve it" };
    if (f.changeAuthors.some((author) => author === null))
      return {
        code: "APPROVAL.SEPARATION_OF_DUTIES",
        message: "the change's author is not a known member, so no approval can be told apart from it",
      };
    if (f.changeAuthors.includes(a.userId))
      return {
        code: "APPROVAL.SEPARATION_OF_DUTIES",
        message: "the author of the change cannot approve its promotion",
      };
  }
  if (a.role === "auditor") return { code: "APPROVAL.NOT_ELIGIBLE", message: "auditors cannot approve" };
  const named = g.members?.includes(a.login) ?? false;
  const byRole = g.role ? g.role === "member" || a.role === "admin" : !g.members;
  if (!named && !byRole)
    return {
      code: "APPROVAL.NOT_ELIGIBLE",
      message: `approvals must come from ${[g.members?.join(", "), g.role ? `an ${g.role}` : null].filter(Boolean).join(" or ")}`,
    };
  return null;
}

export function approvals(f: PromotionFacts, g: NonNullable<Gates["approvals"]>): GateResult {
  const P = "approvals";
  if (!f.approvals.ok) return down(P, "the approvals", f.approvals);
  const counted = f.approvals.value.filter((a) => approvalIneligibility(f, g, a) === null);
  const rejection = counted.find((a) => a.decision === "reject");
  if (rejection) return r(P, "fail", "APPROVALS.REJECTED", `rejected by ${rejection.login}`);
  const yes = counted.filter((a) => a.decision === "approve");
  if (yes.length >= g.count) return r(P, "pass", "APPROVALS.OK", `approved by ${yes.map((a) => a.login).join(", ")}`);
  return r(P, "pending", "APPROVALS.PENDING", `${yes.length} of ${g.count} approvals`);
}

export function freezeWindows(g: NonNullable<Gates["freeze_windows"]>, now: Date): GateResult {
  const active = g.windows.find((w) => inWindow(w, now));
  if (active) return r("freeze_windows", "fail", "FREEZE.ACTIVE", `change freeze: ${describeWindow(active)}`);
  return r("freeze_windows", "pass", "FREEZE.OK", "no freeze window is active");
}

export function allowedRefs(f: PromotionFacts, g: NonNullable<Gates["allowed_refs"]>): GateResult {
  if (!f.run.ok) return down("allowed_refs", "the producing run", f.run);
  const ref = f.run.value.ref;
  if (!refAllowed(ref, g.patterns))
    return r(
      "allowed_refs",
      "fail",
      "REFS.NOT_ALLOWED",
      `ref ${ref ?? "(none)"} matches none of ${g.patterns.join(", ")}`,
    );
  return r("allowed_refs", "pass", "REFS.OK", `ref ${ref ?? ""} is allowed`);
}
