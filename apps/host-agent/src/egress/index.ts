// Mediated egress on the host (docs/adr/0013-mediated-egress.md).
export { EgressProxy, type EgressDecisionEvent } from "./egress-proxy.ts";
export { egressProxyEnv, egressSocketFor, SANDBOX_PROXY_AUTHORITIES } from "./egress-registry.ts";
export { openAttemptEgress, type AttemptEgress } from "./attempt-egress.ts";
