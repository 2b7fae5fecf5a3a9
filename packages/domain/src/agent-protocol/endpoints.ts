import type { z } from "zod";
import * as p from "./index.ts";

// The agent protocol's endpoint table (ADR 0038): every agent <-> control-plane call once, with its
// method, path, credential, request and response schemas. The web routes take their path, auth and
// body/response schemas from it; the host agent's ControlClient is one generic call over it; a test
// holds both sides to it (no route and no client call outside the table).

/** Which credential the caller presents (Authorization: Bearer ...). */
export type AgentAuth =
  /** A host agent's credential (kagent_...). */
  | "agent_token"
  /** A self-hosted runner's registration token (kreg_...), spent once. */
  | "registration_token"
  /** A job token minted for one attempt (a JWT). */
  | "job_token";

export interface AgentEndpoint<Req extends z.ZodType = z.ZodType, Res extends z.ZodType = z.ZodType> {
  method: "POST";
  /** OpenAPI form: `{job_id}`-style parameters, filled in by the caller. */
  path: string;
  auth: AgentAuth;
  /**
   * The JSON body's schema; for `frame` endpoints, the frame's header (the body is a binary frame of
   * that header and raw bytes).
   */
  request: Req;
  body: "json" | "log-frame";
  response: Res;
  /** The success status; `noContent`: 204 is also a success, with no body ("nothing to do"). */
  status: 200 | 201;
  noContent?: true;
}

function endpoint<Req extends z.ZodType, Res extends z.ZodType>(
  e: Omit<AgentEndpoint<Req, Res>, "method" | "body"> & Partial<Pick<AgentEndpoint, "body">>,
): AgentEndpoint<Req, Res> {
  return { method: "POST", body: "json", ...e };
}

const JOB = "/v1/agent/jobs/{job_id}";

export const AGENT_ENDPOINTS = {
  register: endpoint({
    path: "/v1/agent/registrations",
    auth: "registration_token",
    request: p.registrationRequest,
    response: p.registrationResponse,
    status: 201,
  }),
  registerSession: endpoint({
    path: "/v1/agent/sessions",
    auth: "agent_token",
    request: p.registerSessionRequest,
    response: p.registerSessionResponse,
    status: 201,
  }),
  claim: endpoint({
    path: "/v1/agent/claims",
    auth: "agent_token",
    request: p.claimRequest,
    response: p.jobTicket,
    status: 200,
    noContent: true,
  }),
  sessionStats: endpoint({
    path: "/v1/agent/sessions/{session_id}/stats",
    auth: "agent_token",
    request: p.sessionStatsRequest,
    response: p.sessionStatsResponse,
    status: 200,
  }),
  heartbeat: endpoint({
    path: `${JOB}/heartbeat`,
    auth: "job_token",
    request: p.heartbeatRequest,
    response: p.heartbeatResponse,
    status: 200,
  }),
  complete: endpoint({
    path: `${JOB}/complete`,
    auth: "job_token",
    request: p.completeRequest,
    response: p.completeResponse,
    status: 200,
  }),
  openArtifactUpload: endpoint({
    path: `${JOB}/artifacts/uploads`,
    auth: "job_token",
    request: p.artifactOpenRequest,
    response: p.artifactUploadSession,
    status: 200,
  }),
  recordArtifactPart: endpoint({
    path: `${JOB}/artifacts/uploads/{generation_id}/parts`,
    auth: "job_token",
    request: p.artifactPartRequest,
    response: p.artifactPartResponse,
    status: 200,
  }),
  completeArtifactUpload: endpoint({
    path: `${JOB}/artifacts/uploads/{generation_id}/complete`,
    auth: "job_token",
    request: p.artifactCompleteRequest,
    response: p.artifactCompleteResponse,
    status: 200,
  }),
  requestArtifactDownload: endpoint({
    path: `${JOB}/artifacts/downloads`,
    auth: "job_token",
    request: p.artifactDownloadRequest,
    response: p.artifactDownloadGrant,
    status: 200,
  }),
  requestCacheRestore: endpoint({
    path: `${JOB}/caches/restore`,
    auth: "job_token",
    request: p.cacheRestoreRequest,
    response: p.cacheRestoreGrant,
    status: 200,
  }),
  openCacheSave: endpoint({
    path: `${JOB}/caches/saves`,
    auth: "job_token",
    request: p.cacheSaveRequest,
    response: p.cacheSaveSession,
    status: 200,
  }),
  completeCacheSave: endpoint({
    path: `${JOB}/caches/saves/{entry_id}/complete`,
    auth: "job_token",
    request: p.cacheCompleteRequest,
    response: p.cacheCompleteResponse,
    status: 200,
  }),
  reportCacheStats: endpoint({
    path: `${JOB}/caches/stats`,
    auth: "job_token",
    request: p.cacheStatsRequest,
    response: p.cacheStatsResponse,
    status: 200,
  }),
  appendLogs: endpoint({
    path: `${JOB}/logs`,
    auth: "job_token",
    request: p.logAppendHeader,
    body: "log-frame",
    response: p.logAppendResponse,
    status: 200,
  }),
  sealLog: endpoint({
    path: `${JOB}/logs/seal`,
    auth: "job_token",
    request: p.logSealRequest,
    response: p.logSealResponse,
    status: 200,
  }),
  reportEgressEvents: endpoint({
    path: `${JOB}/egress-events`,
    auth: "job_token",
    request: p.egressEventsRequest,
    response: p.egressEventsResponse,
    status: 200,
  }),
  fetchSecrets: endpoint({
    path: `${JOB}/secrets`,
    auth: "job_token",
    request: p.secretsRequest,
    response: p.secretsResponse,
    status: 200,
  }),
  fetchSourceCredential: endpoint({
    path: `${JOB}/source-credential`,
    auth: "job_token",
    request: p.sourceCredentialRequest,
    response: p.sourceCredentialResponse,
    status: 200,
  }),
  mintIdToken: endpoint({
    path: `${JOB}/id-token`,
    auth: "job_token",
    request: p.idTokenRequest,
    response: p.idTokenResponse,
    status: 200,
  }),
} as const;

export type AgentEndpointName = keyof typeof AGENT_ENDPOINTS;

/** The concrete path: each `{name}` replaced by its value, URI-encoded. A missing value throws. */
export function agentEndpointPath(e: Pick<AgentEndpoint, "path">, params: Record<string, string>): string {
  return e.path.replace(/\{([a-z_]+)\}/g, (_, k: string) => {
    const v = params[k];
    if (v === undefined) throw new Error(`${e.path}: no value for {${k}}`);
    return encodeURIComponent(v);
  });
}

const MATCHERS = Object.entries(AGENT_ENDPOINTS).map(([name, e]) => ({
  name: name as AgentEndpointName,
  method: e.method,
  keys: [...e.path.matchAll(/\{([a-z_]+)\}/g)].map((m) => m[1] ?? ""),
  re: new RegExp(`^${e.path.replace(/\{[a-z_]+\}/g, "([^/]+)")}$`),
}));

/** The table's endpoint a request names, with its decoded path parameters; null if none does. */
export function matchAgentEndpoint(
  method: string,
  pathname: string,
): { name: AgentEndpointName; params: Record<string, string> } | null {
  for (const m of MATCHERS) {
    const hit = m.method === method ? m.re.exec(pathname) : null;
    if (hit)
      return {
        name: m.name,
        params: Object.fromEntries(m.keys.map((k, i) => [k, decodeURIComponent(hit[i + 1] ?? "")])),
      };
  }
  return null;
}
