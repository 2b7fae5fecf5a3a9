import type { FailMode, PromotionKind, Verdict } from "./environment-states.ts";
import type { PromotionFacts } from "./gate-facts.ts";
import {
  allowedRefs,
  approvals,
  freezeWindows,
  previousEnvironment,
  provenance,
  requiredOutcomes,
  type GateResult,
} from "./gates.ts";
import { isProduction, type GateKind, type GatePolicy } from "./policy-schema.ts";

// The decision service's pure core (seed 002): policy + facts + the instant -> allow, deny or
// override_required, with one machine-readable reason per gate. The engine loads, calls this,
// and persists; nothing here reads a clock or the pipeline's definition.

export interface Decision {
  verdict: Verdict;
  reasons: GateResult[];
  /** The fail mode this decision was made under (recorded on each decision). */
  failMode: FailMode;
}

export interface DecideOptions {
  /** Gates an applied break-glass override sets aside (the ones that failed when it was recorded). */
  overridden?: readonly GateKind[];
}

/** Gates a rollback evaluates unless the policy says otherwise: the digest was here before. */
const ON_ROLLBACK_DEFAULT: Record<GateKind, boolean> = {
  required_outcomes: true,
  provenance: true,
  previous_environment: false,
  approvals: false,
  freeze_windows: false,
  allowed_refs: true,
};

/**
 * Whether a request of this kind needs a member requester (issue 28): approvals with separation of
 * duties apply to it, and an approver can only be told apart from a requester who is a member.
 */
export function requesterMustBeMember(policy: GatePolicy | null, kind: PromotionKind): boolean {
  const g = policy?.gates.approvals;
  if (!g || !(g.separation_of_duties ?? true)) return false;
  return kind === "promote" || (g.on_rollback ?? ON_ROLLBACK_DEFAULT.approvals);
}

/** Provenance is never overridable: "did we ship what we tested" is not a judgment call. */
function overridable(kind: GateKind, policy: GatePolicy): boolean {
  if (kind === "provenance") return false;
  const g = policy.gates[kind] as { overridable?: boolean } | undefined;
  return g?.overridable ?? true;
}

export function decide(
  policy: GatePolicy | null,
  facts: PromotionFacts,
  now: Date,
  opts: DecideOptions = {},
): Decision {
  if (!policy)
    return {
      verdict: "deny",
      failMode: "closed",
      reasons: [
        { gate: "policy", status: "unavailable", code: "GATE.UNAVAILABLE", message: "the policy version is unknown" },
      ],
    };
  // Production fails closed whatever its document says (the database refuses it too).
  const failMode: FailMode = isProduction(facts.environment) ? "closed" : policy.fail_mode;
  const g = policy.gates;
  const applies = (kind: GateKind, cfg: { on_rollback?: boolean } | undefined): boolean =>
    !!cfg && (facts.kind === "promote" || (cfg.on_rollback ?? ON_ROLLBACK_DEFAULT[kind]));

  const results: GateResult[] = [];
  if (applies("required_outcomes", g.required_outcomes)) results.push(requiredOutcomes(facts));
  if (g.provenance && applies("provenance", g.provenance)) results.push(provenance(facts, g.provenance));
  if (g.previous_environment && applies("previous_environment", g.previous_environment))
    results.push(previousEnvironment(facts, g.previous_environment, now));
  if (g.approvals && applies("approvals", g.approvals)) results.push(approvals(facts, g.approvals));
  if (g.freeze_windows && applies("freeze_windows", g.freeze_windows))
    results.push(freezeWindows(g.freeze_windows, now));
  if (g.allowed_refs && applies("allowed_refs", g.allowed_refs)) results.push(allowedRefs(facts, g.allowed_refs));

  const reasons = results.map((res) => settle(res, failMode, policy, opts.overridden ?? []));
  return { verdict: verdictOf(reasons, policy), reasons, failMode };
}

function settle(res: GateResult, failMode: FailMode, policy: GatePolicy, overridden: readonly GateKind[]): GateResult {
  if (res.gate === "policy") return res;
  if (res.status === "unavailable") {
    // A quarantine or provenance lookup never fails open: quarantined artifacts never pass.
    if (failMode === "open" && res.gate !== "provenance")
      return { ...res, status: "skipped", message: `${res.message} (skipped: this environment fails open)` };
    return res;
  }
  if (
    (res.status === "fail" || res.status === "pending") &&
    overridden.includes(res.gate) &&
    overridable(res.gate, policy)
  )
    return { ...res, status: "overridden", message: `${res.message} (overridden)` };
  return res;
}

function verdictOf(reasons: GateResult[], policy: GatePolicy): Verdict {
  let human = false;
  for (const res of reasons) {
    if (res.status === "unavailable") return "deny";
    if (
      res.status === "fail" &&
      (res.gate === "policy" || !overridable(res.gate, policy) || res.code === "APPROVALS.REJECTED")
    )
      return "deny";
    if (res.status === "fail" || res.status === "pending") human = true;
  }
  return human ? "override_required" : "allow";
}

/** The gates an override would set aside now: the overridable ones not passing. */
export function overridableFailures(d: Decision, policy: GatePolicy): GateKind[] {
  return d.reasons
    .filter((res) => (res.status === "fail" || res.status === "pending") && res.gate !== "policy")
    .map((res) => res.gate as GateKind)
    .filter((k) => overridable(k, policy));
}
