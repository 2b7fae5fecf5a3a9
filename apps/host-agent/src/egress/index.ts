// Mediated egress on the host (docs/adr/0013-mediated-egress.md).
export { EgressProxy } from "./egress-proxy.ts";
export { openAttemptEgress, type AttemptEgress } from "./attempt-egress.ts";
