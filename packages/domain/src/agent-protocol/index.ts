// The agent <-> control-plane contract, shared by both sides (conventions rule 10). Paths:
//   POST /v1/agent/sessions               host credential  registerSessionRequest -> registerSessionResponse (201)
//   POST /v1/agent/claims                 host credential  claimRequest -> jobTicket (200) | 204 no work
//   POST /v1/agent/jobs/{job_id}/heartbeat job token       heartbeatRequest -> heartbeatResponse | 409 stale
//   POST /v1/agent/jobs/{job_id}/complete  job token       completeRequest -> completeResponse | 409 refused
// Errors are {error: {code, message}}; 409 ATTEMPT.STALE_EPOCH / ATTEMPT.LEASE_EXPIRED mean
// "destroy the sandbox now, publish nothing".

export * from "./sessions.ts";
export * from "./attempts.ts";
export * from "./artifacts.ts";
export * from "./logs.ts";
export * from "./egress.ts";
export * from "./caches.ts";
export * from "./job-credentials.ts";
export * from "./fleet.ts";
