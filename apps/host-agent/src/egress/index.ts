// Mediated egress on the host (docs/adr/0013-mediated-egress.md).
export {
  EgressProxy,
  type EgressProxyOptions,
  type AttemptEgressSpec,
  type EgressDecisionEvent,
} from "./egress-proxy.ts";
export { openAttemptEgress, type AttemptEgress } from "./attempt-egress.ts";
export { egressEndpointFor, egressSocketFor, egressProxyEnv, type EgressListenerAddress } from "./egress-registry.ts";
