export {
  allowEgressHost,
  removeEgressHost,
  listEgressRules,
  type EgressRuleRow,
  type EgressRuleInput,
} from "./egress-rules.ts";
export { egressPolicy, egressPolicyForAttempt, type EgressPolicy } from "./egress-policy-for-attempt.ts";
export { recordEgressEvents, type EgressEventsReport } from "./record-egress-events.ts";
export { listRunEgress, type RunEgressEvent } from "./run-egress.ts";
