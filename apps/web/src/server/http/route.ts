import { DomainError } from "@kiln/domain";
import type { z } from "zod";
import { env } from "../env.ts";
import type { TakeResult } from "@kiln/engine";
import { toErrorResponse } from "./error-map.ts";
import { limitRoute, rateLimitOf, withRateLimitHeaders } from "./rate-limit.ts";
import { RATE_SURFACE } from "./rate-surface.ts";

type Params = Record<string, string>;

/**
 * How a route authenticates its caller; the OpenAPI document's security requirement comes from it
 * (docs/adr/0029). The handler still makes the call on its first line: declaring it here documents
 * it, it does not perform it.
 */
export type RouteAuth =
  /** An org-scoped API token (Authorization: Bearer kiln_...). */
  | "api_token"
  /** An API token, or the dashboard's session cookie of a member of the resource's org. */
  | "api_token_or_session"
  /** A host agent's credential (Authorization: Bearer kagent_...). */
  | "agent_token"
  /** A self-hosted runner's registration token (Authorization: Bearer kreg_...), spent once. */
  | "registration_token"
  /** A job token minted for one attempt (Authorization: Bearer <JWT>). */
  | "job_token"
  /** The forge's HMAC signature of the body (X-Hub-Signature-256). */
  | "webhook_signature"
  /** The operator's Prometheus scrape token (Authorization: Bearer $KILN_METRICS_TOKEN). */
  | "metrics_token"
  | "none";

interface ResponseSpec {
  description: string;
  /** The JSON body; omit for a body-less answer (302, 204). */
  schema?: z.ZodType;
  /** A non-JSON body (SSE, bytes): its media type. */
  contentType?: string;
  /** Response headers worth documenting, name -> description. */
  headers?: Record<string, string>;
}

/** What a route declares about itself: the OpenAPI registry builds the document from this. */
export interface RouteSpec {
  /** The OpenAPI path, path params snake_case: `/v1/repos/{repo_id}/workflow-runs` for `[repoId]`. */
  path: string;
  summary: string;
  description?: string;
  auth: RouteAuth;
  /** Query parameters, parsed and validated before the handler runs (REQUEST.INVALID otherwise). */
  query?: z.ZodObject;
  /** A non-JSON request body (log chunk batches): its media type and what it is. */
  rawBody?: { contentType: string; description: string };
  /** Request headers the route reads, name -> description (Idempotency-Key, Last-Event-ID). */
  headers?: Record<string, { description: string; required?: boolean }>;
  /** Success answers by status. Errors are always `{error: {code, message}}` and documented once. */
  responses: Record<number, ResponseSpec>;
}

export interface RouteContext<B, Q> {
  req: Request;
  params: Params;
  body: B;
  query: Q;
  rawBody: Uint8Array;
}

type Handler = ((req: Request, ctx: { params: Promise<Params> }) => Promise<Response>) & {
  /** Read by the OpenAPI registry (server/http/openapi); every route has one. */
  readonly spec: RouteSpec & { body?: z.ZodType; uuidParams: string[] };
};

type Infer<S> = S extends z.ZodType ? z.infer<S> : undefined;

/**
 * The one builder every REST route goes through (conventions rule 5): it declares the route for
 * the OpenAPI document (path, summary, auth, query/body/response schemas), enforces the caller's
 * rate limit (docs/adr/0044) and the body size limit, parses JSON and the query string against the
 * route's schemas, checks UUID path params, and maps every error to {error: {code, message}}. Authentication is the handler's first line, so
 * no route can forget that it has to choose one.
 */
export function route<S extends z.ZodType | undefined = undefined, Q extends z.ZodObject | undefined = undefined>(
  def: RouteSpec & {
    body?: S;
    query?: Q;
    uuidParams?: string[];
    maxBytes?: number;
    handler: (ctx: RouteContext<Infer<S>, Infer<Q>>) => Promise<Response>;
  },
): Handler {
  const surface = RATE_SURFACE[def.auth];
  const run = async (req: Request, ctx: { params: Promise<Params> }): Promise<Response> => {
    let limit: TakeResult | null = null;
    try {
      // First, before the body is read: a caller over its budget costs one Redis round trip.
      limit = await limitRoute(surface, req);
      const params = (await ctx.params) ?? {};
      for (const p of def.uuidParams ?? []) {
        if (!UUID.test(params[p] ?? "")) throw new DomainError(notFoundCode(p), `${p} is not a valid id`);
      }
      const query = def.query ? parseQuery(def.query, new URL(req.url).searchParams) : undefined;
      const rawBody = await readLimited(req, def.maxBytes ?? env().KILN_MAX_BODY_BYTES);
      let body: unknown = undefined;
      if (def.body) {
        let json: unknown;
        try {
          json = rawBody.length === 0 ? {} : JSON.parse(Buffer.from(rawBody).toString("utf8"));
        } catch {
          throw new DomainError("REQUEST.INVALID", "body is not valid JSON");
        }
        const parsed = def.body.safeParse(json);
        if (!parsed.success) {
          const issue = parsed.error.issues[0];
          throw new DomainError(
            "REQUEST.INVALID",
            `${issue?.path.join(".") || "body"}: ${issue?.message ?? "invalid"}`,
          );
        }
        body = parsed.data;
      }
      return withRateLimitHeaders(
        await def.handler({ req, params, body: body as never, query: query as never, rawBody }),
        limit,
      );
    } catch (e) {
      return withRateLimitHeaders(toErrorResponse(e), limit ?? rateLimitOf(e));
    }
  };
  const { handler: _handler, maxBytes: _maxBytes, ...spec } = def;
  return Object.assign(run, { spec: { ...spec, uuidParams: def.uuidParams ?? [] } });
}

/** An id that is not a UUID names the same "not found" as a UUID nobody has. */
function notFoundCode(
  param: string,
):
  | "RUN.NOT_FOUND"
  | "REPO.NOT_FOUND"
  | "JOB.NOT_FOUND"
  | "ARTIFACT.NOT_FOUND"
  | "SCHEDULE.NOT_FOUND"
  | "ENV.NOT_FOUND"
  | "PROMOTION.NOT_FOUND"
  | "RUNNER.NOT_FOUND" {
  if (param.startsWith("env")) return "ENV.NOT_FOUND";
  if (param.startsWith("promotion")) return "PROMOTION.NOT_FOUND";
  if (param.startsWith("runner")) return "RUNNER.NOT_FOUND";
  if (param.startsWith("run")) return "RUN.NOT_FOUND";
  if (param.startsWith("repo")) return "REPO.NOT_FOUND";
  if (param.startsWith("schedule")) return "SCHEDULE.NOT_FOUND";
  if (param.startsWith("artifact")) return "ARTIFACT.NOT_FOUND";
  return "JOB.NOT_FOUND";
}

/** One value per key (a repeated key is refused rather than silently picking one). */
function parseQuery(schema: z.ZodObject, sp: URLSearchParams): unknown {
  const raw: Record<string, string> = {};
  for (const [k, v] of sp) {
    if (k in raw) throw new DomainError("REQUEST.INVALID", `query parameter ${k} is given twice`);
    raw[k] = v;
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new DomainError("REQUEST.INVALID", `${issue?.path.join(".") || "query"}: ${issue?.message ?? "invalid"}`);
  }
  return parsed.data;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export async function readLimited(req: Request, max: number): Promise<Uint8Array> {
  const declared = Number(req.headers.get("content-length") ?? "0");
  if (declared > max) throw new DomainError("REQUEST.TOO_LARGE", `body exceeds ${max} bytes`);
  if (!req.body) return new Uint8Array();
  const chunks: Uint8Array[] = [];
  let total = 0;
  const reader = req.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > max) {
      await reader.cancel();
      throw new DomainError("REQUEST.TOO_LARGE", `body exceeds ${max} bytes`);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks);
}

export function json(status: number, body: unknown): Response {
  return Response.json(body, { status, headers: { "cache-control": "no-store" } });
}

/**
 * For machine peers (host agents, the forge's webhook sender): `no-transform` keeps Next's gzip
 * off these answers. Tickets and acks are a few KiB on a data-centre link; compressing each one
 * cost the web ~0.3 ms of CPU per claim, 6% of its time under claim load (docs/benchmarks.md).
 */
export function machineJson(status: number, body: unknown): Response {
  return Response.json(body, { status, headers: { "cache-control": "no-store, no-transform" } });
}
