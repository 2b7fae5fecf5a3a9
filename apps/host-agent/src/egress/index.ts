// Mediated egress on the host (docs/adr/0013-mediated-egress.md).
export { EgressProxy, type EgressDecisionEvent } from "./egress-proxy.ts";
export { egressProxyEnv, egressSocketFor } from "./egress-registry.ts";
export { openAttemptEgress, type AttemptEgress } from "./attempt-egress.ts";
