// Public API of the environments capability (issue 18, docs/adr/0032-environments-gates-promotions.md).
export * from "./environment-states.ts";
export {
  GATE_KINDS,
  WEEKDAYS,
  defaultPolicy,
  gatePolicySchema,
  isProduction,
  parsePolicy,
  type GateKind,
  type GatePolicy,
  type GatePolicyInput,
  type PolicyProblem,
  type PolicyTarget,
} from "./policy-schema.ts";
export {
  known,
  unavailable,
  type ApprovalFact,
  type AttestationFacts,
  type Fact,
  type PromotionFacts,
  type RunFacts,
} from "./gate-facts.ts";
export { approvalIneligibility, type GateResult, type GateStatus } from "./gates.ts";
export { decide, overridableFailures, requesterMustBeMember, type Decision, type DecideOptions } from "./decide.ts";
export { inWindow } from "./freeze-window.ts";
export { refAllowed, refMatches } from "./ref-pattern.ts";
