// Fetch-based client for the agent <-> control-plane protocol. Requests are checked against the
// shared zod schemas before they leave, responses are validated before anyone trusts them, and
// every failure comes back as a value (never a throw) so each loop decides how to retry.
import {
  AGENT_ENDPOINTS,
  agentEndpointPath,
  agentProtocol,
  encodeLogFrame,
  LOG_CHUNKS_CONTENT_TYPE,
  type AgentEndpointName,
} from "@kiln/domain";
import type { z } from "zod";

export type RegisterSessionRequest = z.input<typeof agentProtocol.registerSessionRequest>;
export type RegisterSessionResponse = z.output<typeof agentProtocol.registerSessionResponse>;
export type ClaimRequest = z.input<typeof agentProtocol.claimRequest>;
export type JobTicket = agentProtocol.JobTicketWire;
export type HeartbeatRequest = z.input<typeof agentProtocol.heartbeatRequest>;
export type HeartbeatResponse = z.output<typeof agentProtocol.heartbeatResponse>;
export type CompleteRequest = z.input<typeof agentProtocol.completeRequest>;
export type CompleteResponse = z.output<typeof agentProtocol.completeResponse>;
export type ArtifactOpenRequest = z.input<typeof agentProtocol.artifactOpenRequest>;
export type ArtifactUploadSession = z.output<typeof agentProtocol.artifactUploadSession>;
export type ArtifactPartRequest = z.input<typeof agentProtocol.artifactPartRequest>;
export type ArtifactPartResponse = z.output<typeof agentProtocol.artifactPartResponse>;
export type ArtifactCompleteResponse = z.output<typeof agentProtocol.artifactCompleteResponse>;
export type ArtifactDownloadRequest = z.input<typeof agentProtocol.artifactDownloadRequest>;
export type ArtifactDownloadGrant = z.output<typeof agentProtocol.artifactDownloadGrant>;
export type CacheRestoreRequest = z.input<typeof agentProtocol.cacheRestoreRequest>;
export type CacheRestoreGrant = z.output<typeof agentProtocol.cacheRestoreGrant>;
export type CacheSaveRequest = z.input<typeof agentProtocol.cacheSaveRequest>;
export type CacheSaveSession = z.output<typeof agentProtocol.cacheSaveSession>;
export type CacheCompleteResponse = z.output<typeof agentProtocol.cacheCompleteResponse>;
export type CacheStatsRequest = z.input<typeof agentProtocol.cacheStatsRequest>;
export type LogAppendHeader = z.input<typeof agentProtocol.logAppendHeader>;
export type LogAppendResponse = z.output<typeof agentProtocol.logAppendResponse>;
export type LogSealRequest = z.input<typeof agentProtocol.logSealRequest>;
export type LogSealResponse = z.output<typeof agentProtocol.logSealResponse>;
export type EgressEventsRequest = z.input<typeof agentProtocol.egressEventsRequest>;
export type EgressEventsResponse = z.output<typeof agentProtocol.egressEventsResponse>;
export type SecretsResponse = z.output<typeof agentProtocol.secretsResponse>;
export type SourceCredentialResponse = z.output<typeof agentProtocol.sourceCredentialResponse>;
export type IdTokenRequest = z.input<typeof agentProtocol.idTokenRequest>;
export type IdTokenResponse = z.output<typeof agentProtocol.idTokenResponse>;
export type SessionStatsRequest = z.input<typeof agentProtocol.sessionStatsRequest>;
export type SessionStatsResponse = z.output<typeof agentProtocol.sessionStatsResponse>;

export type ApiResult<T> =
  | { ok: true; status: number; data: T }
  /** The server answered with an error status; `code` is its namespaced error code if it sent one. */
  | { ok: false; kind: "http"; status: number; code: string; message: string }
  /** No answer: connection refused, reset, timeout. The request may or may not have been applied. */
  | { ok: false; kind: "network"; message: string }
  /** A 2xx whose body does not match the contract. */
  | { ok: false; kind: "protocol"; status: number; message: string };

/** Worth repeating the same request: no answer, a server error or back-pressure. */
export function isRetriable(r: ApiResult<unknown>): boolean {
  if (r.ok) return false;
  if (r.kind === "network") return true;
  return r.kind === "http" && (r.status >= 500 || r.status === 429);
}

export function describeFailure(r: ApiResult<unknown>): string {
  if (r.ok) return `ok (${r.status})`;
  if (r.kind === "http") return `${r.status} ${r.code}: ${r.message}`;
  if (r.kind === "protocol") return `bad response (${r.status}): ${r.message}`;
  return `network error: ${r.message}`;
}

interface CallOptions {
  timeoutMs: number;
  signal?: AbortSignal;
}

/** An endpoint of the table, as the client sees it. */
type Endpoint = (typeof AGENT_ENDPOINTS)[AgentEndpointName];
type ResponseOf<E extends Endpoint> = z.output<E["response"]>;
/** A 204-capable endpoint (claim) answers null for "nothing to do". */
type ResultOf<E extends Endpoint> = E extends { noContent: true } ? ResponseOf<E> | null : ResponseOf<E>;

export class ControlClient {
  private readonly baseUrl: string;

  constructor(
    baseUrl: string,
    private readonly hostToken: string,
    private readonly fetchImpl: typeof fetch = fetch,
  ) {
    this.baseUrl = baseUrl.replace(/\/+$/, "");
  }

  /**
   * Any endpoint of the table (ADR 0038): the request is checked against its schema before it
   * leaves, the path parameters filled in, the answer validated against the response schema.
   * `token` is the job token for job endpoints; host endpoints use the host credential.
   */
  call<E extends Endpoint>(
    e: E,
    params: Record<string, string>,
    body: z.input<E["request"]>,
    opts: CallOptions & { token?: string; frame?: Uint8Array[] },
  ): Promise<ApiResult<ResultOf<E>>> {
    const token = e.auth === "job_token" ? (opts.token ?? "") : this.hostToken;
    const header: unknown = e.request.parse(body);
    // Log chunk bytes travel raw in a binary frame (LOG_CHUNKS_CONTENT_TYPE), in header order.
    const payload =
      e.body === "log-frame"
        ? new RawBody(encodeLogFrame(header as LogAppendHeader, opts.frame ?? []), LOG_CHUNKS_CONTENT_TYPE)
        : header;
    return this.post(agentEndpointPath(e, params), token, payload, e.response, opts, "noContent" in e) as Promise<
      ApiResult<ResultOf<E>>
    >;
  }

  registerSession(body: RegisterSessionRequest, opts: CallOptions): Promise<ApiResult<RegisterSessionResponse>> {
    return this.call(AGENT_ENDPOINTS.registerSession, {}, body, opts);
  }

  /** `data` is null on 204: nothing to do within wait_ms. */
  claim(body: ClaimRequest, opts: CallOptions): Promise<ApiResult<JobTicket | null>> {
    return this.call(AGENT_ENDPOINTS.claim, {}, body, opts);
  }

  /** Fleet stats (issue 22); the answer says whether an operator sent a reclaim notice. */
  sessionStats(
    sessionId: string,
    body: SessionStatsRequest,
    opts: CallOptions,
  ): Promise<ApiResult<SessionStatsResponse>> {
    return this.call(AGENT_ENDPOINTS.sessionStats, { session_id: sessionId }, body, opts);
  }

  // The job endpoints: the job token names one attempt. Thin names over `call` for the callers.
  heartbeat(jobId: string, jobToken: string, body: HeartbeatRequest, opts: CallOptions) {
    return this.call(AGENT_ENDPOINTS.heartbeat, { job_id: jobId }, body, { ...opts, token: jobToken });
  }

  complete(jobId: string, jobToken: string, body: CompleteRequest, opts: CallOptions) {
    return this.call(AGENT_ENDPOINTS.complete, { job_id: jobId }, body, { ...opts, token: jobToken });
  }

  // Artifacts (docs/adr/0007-artifacts.md): metadata only; bytes go to presigned URLs.
  openArtifactUpload(jobId: string, jobToken: string, body: ArtifactOpenRequest, opts: CallOptions) {
    return this.call(AGENT_ENDPOINTS.openArtifactUpload, { job_id: jobId }, body, { ...opts, token: jobToken });
  }

  recordArtifactPart(
    jobId: string,
    jobToken: string,
    generationId: string,
    body: ArtifactPartRequest,
    opts: CallOptions,
  ) {
    const params = { job_id: jobId, generation_id: generationId };
    return this.call(AGENT_ENDPOINTS.recordArtifactPart, params, body, { ...opts, token: jobToken });
  }

  completeArtifactUpload(jobId: string, jobToken: string, generationId: string, epoch: number, opts: CallOptions) {
    const params = { job_id: jobId, generation_id: generationId };
    return this.call(AGENT_ENDPOINTS.completeArtifactUpload, params, { epoch }, { ...opts, token: jobToken });
  }

  requestArtifactDownload(jobId: string, jobToken: string, body: ArtifactDownloadRequest, opts: CallOptions) {
    return this.call(AGENT_ENDPOINTS.requestArtifactDownload, { job_id: jobId }, body, { ...opts, token: jobToken });
  }

  // Build caches (docs/adr/0014-build-caches.md): metadata only; bytes go to presigned URLs.
  requestCacheRestore(jobId: string, jobToken: string, body: CacheRestoreRequest, opts: CallOptions) {
    return this.call(AGENT_ENDPOINTS.requestCacheRestore, { job_id: jobId }, body, { ...opts, token: jobToken });
  }

  openCacheSave(jobId: string, jobToken: string, body: CacheSaveRequest, opts: CallOptions) {
    return this.call(AGENT_ENDPOINTS.openCacheSave, { job_id: jobId }, body, { ...opts, token: jobToken });
  }

  completeCacheSave(jobId: string, jobToken: string, entryId: string, epoch: number, opts: CallOptions) {
    const params = { job_id: jobId, entry_id: entryId };
    return this.call(AGENT_ENDPOINTS.completeCacheSave, params, { epoch }, { ...opts, token: jobToken });
  }

  reportCacheStats(jobId: string, jobToken: string, body: CacheStatsRequest, opts: CallOptions) {
    return this.call(AGENT_ENDPOINTS.reportCacheStats, { job_id: jobId }, body, { ...opts, token: jobToken });
  }

  // Logs (docs/adr/0006-logs.md): 200 means the chunks are durable on the control plane.
  appendLogs(jobId: string, jobToken: string, header: LogAppendHeader, payloads: Uint8Array[], opts: CallOptions) {
    const o = { ...opts, token: jobToken, frame: payloads };
    return this.call(AGENT_ENDPOINTS.appendLogs, { job_id: jobId }, header, o);
  }

  sealLog(jobId: string, jobToken: string, body: LogSealRequest, opts: CallOptions) {
    return this.call(AGENT_ENDPOINTS.sealLog, { job_id: jobId }, body, { ...opts, token: jobToken });
  }

  // Mediated egress (docs/adr/0013-mediated-egress.md): the host proxy's decisions for one attempt.
  reportEgressEvents(jobId: string, jobToken: string, body: EgressEventsRequest, opts: CallOptions) {
    return this.call(AGENT_ENDPOINTS.reportEgressEvents, { job_id: jobId }, body, { ...opts, token: jobToken });
  }

  // Secrets (docs/adr/0025): the broker, once per attempt at job start.
  fetchSecrets(jobId: string, jobToken: string, epoch: number, opts: CallOptions) {
    return this.call(AGENT_ENDPOINTS.fetchSecrets, { job_id: jobId }, { epoch }, { ...opts, token: jobToken });
  }

  // Private checkouts (issue 28): the repo's forge credential for this agent's own git fetch.
  fetchSourceCredential(jobId: string, jobToken: string, epoch: number, opts: CallOptions) {
    const o = { ...opts, token: jobToken };
    return this.call(AGENT_ENDPOINTS.fetchSourceCredential, { job_id: jobId }, { epoch }, o);
  }

  // Workload identity (docs/adr/0024): an ID token for a step of the attempt this job token names.
  mintIdToken(jobId: string, jobToken: string, body: IdTokenRequest, opts: CallOptions) {
    return this.call(AGENT_ENDPOINTS.mintIdToken, { job_id: jobId }, body, { ...opts, token: jobToken });
  }

  private async post(
    path: string,
    token: string,
    body: unknown,
    schema: z.ZodType,
    opts: CallOptions,
    allowNoContent: boolean,
  ): Promise<ApiResult<unknown>> {
    const timeout = AbortSignal.timeout(opts.timeoutMs);
    const signal = opts.signal ? AbortSignal.any([opts.signal, timeout]) : timeout;
    let res: Response;
    let text: string;
    const raw = body instanceof RawBody ? body : null;
    try {
      res = await this.fetchImpl(`${this.baseUrl}${path}`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${token}`,
          "content-type": raw ? raw.contentType : "application/json",
          accept: "application/json",
        },
        body: raw ? raw.bytes : JSON.stringify(body),
        signal,
      });
      text = await res.text();
    } catch (err) {
      return { ok: false, kind: "network", message: describeNetworkError(err) };
    }
    if (res.status === 204 && allowNoContent) return { ok: true, status: 204, data: null };
    if (!res.ok) return { ok: false, kind: "http", status: res.status, ...parseErrorBody(res.status, text) };
    const parsed = schema.safeParse(safeJson(text));
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      return {
        ok: false,
        kind: "protocol",
        status: res.status,
        message: issue ? `${issue.path.join(".")}: ${issue.message}` : "invalid body",
      };
    }
    return { ok: true, status: res.status, data: parsed.data };
  }
}

/** A request body sent as-is instead of as JSON. */
class RawBody {
  constructor(
    readonly bytes: Uint8Array<ArrayBuffer>,
    readonly contentType: string,
  ) {}
}

function parseErrorBody(status: number, text: string): { code: string; message: string } {
  const parsed = agentProtocol.errorBody.safeParse(safeJson(text));
  if (parsed.success) return { code: parsed.data.error.code, message: parsed.data.error.message.slice(0, 500) };
  return { code: `HTTP_${status}`, message: text.slice(0, 200) };
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function describeNetworkError(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  if (err.name === "TimeoutError") return "request timed out";
  if (err.name === "AbortError") return "request aborted";
  // undici hides the useful part (ECONNREFUSED, ...) in `cause`.
  const cause = (err as Error & { cause?: unknown }).cause;
  return cause instanceof Error ? `${err.message}: ${cause.message}` : err.message;
}
