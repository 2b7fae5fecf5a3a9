import { z } from "zod";
import type { RouteAuth, RouteSpec } from "../route.ts";
import { RATE_SURFACE } from "../rate-surface.ts";
import { DOCUMENT_ROUTES } from "./document-routes.ts";

// Builds the OpenAPI 3.1 documents from the routes' own declarations (docs/adr/0029): nothing is
// written twice, so the document cannot say something the route does not do. Two documents: the
// public API (/v1/openapi.json: REST, webhooks, health) and the agent protocol
// (/v1/agent/openapi.json: host agents only, versioned with the agent, not a public contract).

export type ApiDocumentKind = "public" | "agent";

const METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"] as const;

type Spec = RouteSpec & { body?: z.ZodType; uuidParams: string[] };

export interface DocumentedRoute {
  /** The route file's directory under src/app, e.g. `v1/repos/[repoId]/workflow-runs`. */
  dir: string;
  method: (typeof METHODS)[number];
  spec: Spec;
}

/** Which document a path belongs to: the agent protocol lives under /v1/agent/. */
export function documentOf(path: string): ApiDocumentKind {
  return path.startsWith("/v1/agent/") ? "agent" : "public";
}

/** Route modules by directory, loaded lazily (app/route-manifest.ts; passed in: server/ imports no app/). */
export type RouteModules = Record<string, () => Promise<Record<string, unknown>>>;

/**
 * Every exported method handler of every route module, with its spec (null spec: undocumented), and
 * the two routes serving the documents (declared in document-routes.ts, not loaded: see there).
 */
export async function loadRoutes(
  modules: RouteModules,
): Promise<(Omit<DocumentedRoute, "spec"> & { spec: Spec | null })[]> {
  const out: (Omit<DocumentedRoute, "spec"> & { spec: Spec | null })[] = Object.values(DOCUMENT_ROUTES).map(
    ({ dir, spec }) => ({ dir, method: "GET", spec: { ...spec, uuidParams: [] } }),
  );
  for (const [dir, load] of Object.entries(modules)) {
    const mod = await load();
    for (const method of METHODS) {
      const h: unknown = mod[method];
      if (typeof h === "function") out.push({ dir, method, spec: (h as { spec?: Spec }).spec ?? null });
    }
  }
  return out;
}

const SECURITY: Record<RouteAuth, Record<string, string[]>[]> = {
  api_token: [{ apiToken: [] }],
  api_token_or_session: [{ apiToken: [] }, { session: [] }],
  agent_token: [{ agentToken: [] }],
  registration_token: [{ registrationToken: [] }],
  job_token: [{ jobToken: [] }],
  webhook_signature: [{ webhookSignature: [] }],
  metrics_token: [{ metricsToken: [] }],
  none: [],
};

const SECURITY_SCHEMES = {
  apiToken: {
    type: "http",
    scheme: "bearer",
    description: "An org-scoped API token (kiln_...), see `kiln token create`.",
  },
  session: { type: "apiKey", in: "cookie", name: "authjs.session-token", description: "The dashboard's session." },
  agentToken: { type: "http", scheme: "bearer", description: "A host agent's credential (kagent_...)." },
  registrationToken: {
    type: "http",
    scheme: "bearer",
    description: "A self-hosted runner's registration token (kreg_...), spent by its one exchange.",
  },
  jobToken: { type: "http", scheme: "bearer", bearerFormat: "JWT", description: "A job token for one attempt." },
  metricsToken: { type: "http", scheme: "bearer", description: "The operator's scrape token (KILN_METRICS_TOKEN)." },
  webhookSignature: {
    type: "apiKey",
    in: "header",
    name: "X-Hub-Signature-256",
    description: "sha256=<HMAC-SHA256 of the body with the repo's webhook secret>",
  },
};

const ERROR = {
  type: "object",
  required: ["error"],
  properties: {
    error: {
      type: "object",
      required: ["code", "message"],
      properties: {
        code: { type: "string", description: "a namespaced code, e.g. RUN.NOT_FOUND, AUTH.TOKEN_REVOKED" },
        message: { type: "string" },
        details: { type: "object" },
      },
    },
  },
};

/** JSON Schema 2020-12 (OpenAPI 3.1's dialect) for a zod schema, without its own $schema line. */
function schemaOf(s: z.ZodType, io: "input" | "output"): Record<string, unknown> {
  const js = z.toJSONSchema(s, { target: "draft-2020-12", io, unrepresentable: "any" }) as Record<string, unknown>;
  delete js.$schema;
  return js;
}

/** `[repoId]` in a directory is `{repo_id}` in the document (a catch-all `[...path]` is `{path}`). */
export function openApiPathOf(dir: string): string {
  return `/${dir.replace(/\[(?:\.\.\.)?([A-Za-z]+)\]/g, (_, p: string) => `{${p.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)}}`)}`;
}

function camel(snake: string): string {
  return snake.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
}

function operation(r: DocumentedRoute): Record<string, unknown> {
  const { spec } = r;
  const parameters: Record<string, unknown>[] = [];
  for (const m of spec.path.matchAll(/\{([a-z_]+)\}/g)) {
    const name = m[1] ?? "";
    const isUuid = spec.uuidParams.includes(camel(name));
    parameters.push({
      name,
      in: "path",
      required: true,
      schema: isUuid ? { type: "string", format: "uuid" } : { type: "string" },
    });
  }
  if (spec.query) {
    const js = schemaOf(spec.query, "input") as {
      properties?: Record<string, Record<string, unknown>>;
      required?: string[];
    };
    for (const [name, schema] of Object.entries(js.properties ?? {})) {
      const { description, ...rest } = schema;
      parameters.push({
        name,
        in: "query",
        required: js.required?.includes(name) ?? false,
        schema: rest,
        ...(typeof description === "string" ? { description } : {}),
      });
    }
  }
  for (const [name, h] of Object.entries(spec.headers ?? {}))
    parameters.push({
      name,
      in: "header",
      required: h.required ?? false,
      description: h.description,
      schema: { type: "string" },
    });

  const responses: Record<string, unknown> = {};
  for (const [status, res] of Object.entries(spec.responses)) {
    // A route may answer JSON and another media type on one status (usage as JSON or CSV).
    const content =
      res.schema || res.contentType
        ? {
            ...(res.schema ? { "application/json": { schema: schemaOf(res.schema, "output") } } : {}),
            ...(res.contentType ? { [res.contentType]: { schema: { type: "string" } } } : {}),
          }
        : undefined;
    responses[status] = {
      description: res.description,
      ...(content ? { content } : {}),
      ...(res.headers
        ? {
            headers: Object.fromEntries(
              Object.entries(res.headers).map(([h, d]) => [h, { description: d, schema: { type: "string" } }]),
            ),
          }
        : {}),
    };
  }
  // Rate-limited routes (docs/adr/0044) say so, with the headers a client backs off by.
  if (RATE_SURFACE[spec.auth]) {
    responses["429"] = {
      description: "RATE.LIMITED: over the caller's budget; retry after Retry-After seconds",
      headers: {
        "Retry-After": { description: "seconds until a request will be admitted", schema: { type: "string" } },
        "RateLimit-Limit": { description: "the tightest bucket's size (burst)", schema: { type: "string" } },
        "RateLimit-Remaining": { description: "requests left in it now", schema: { type: "string" } },
        "RateLimit-Reset": { description: "seconds until it is full again", schema: { type: "string" } },
      },
      content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } },
    };
  }
  responses.default = {
    description: "an error",
    content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } },
  };

  const requestBody = spec.body
    ? { required: true, content: { "application/json": { schema: schemaOf(spec.body, "input") } } }
    : spec.rawBody
      ? {
          required: true,
          description: spec.rawBody.description,
          content: { [spec.rawBody.contentType]: { schema: { type: "string" } } },
        }
      : undefined;
  return {
    operationId: `${r.method.toLowerCase()}${spec.path.replace(/[^A-Za-z0-9]+(.)?/g, (_, c?: string) => (c ? c.toUpperCase() : ""))}`,
    summary: spec.summary,
    ...(spec.description ? { description: spec.description } : {}),
    tags: [spec.path.split("/")[2] ?? spec.path.split("/")[1] ?? "api"],
    security: SECURITY[spec.auth],
    ...(parameters.length > 0 ? { parameters } : {}),
    ...(requestBody ? { requestBody } : {}),
    responses,
  };
}

/** The document: every documented route of its kind, paths sorted. */
export async function buildOpenApiDocument(
  kind: ApiDocumentKind,
  modules: RouteModules,
): Promise<Record<string, unknown>> {
  const routes = (await loadRoutes(modules)).filter(
    (r): r is DocumentedRoute => r.spec !== null && documentOf(r.spec.path) === kind,
  );
  const paths: Record<string, Record<string, unknown>> = {};
  for (const r of routes.sort((a, b) => a.spec.path.localeCompare(b.spec.path))) {
    paths[r.spec.path] ??= {};
    const item = paths[r.spec.path];
    if (item) item[r.method.toLowerCase()] = operation(r);
  }
  return {
    openapi: "3.1.0",
    info:
      kind === "public"
        ? {
            title: "Kiln API",
            version: "1",
            description:
              "Kiln's public REST API. Every /v1 call takes one org's API token; another org's resources answer 404; errors are {error: {code, message}}.",
          }
        : {
            title: "Kiln agent protocol",
            version: "1",
            description: "Between host agents and the control plane only; not a public contract (docs/adr/0029).",
          },
    paths,
    components: { schemas: { Error: ERROR }, securitySchemes: SECURITY_SCHEMES },
  };
}
