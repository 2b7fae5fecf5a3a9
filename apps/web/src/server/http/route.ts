import { DomainError } from "@kiln/domain";
import type { z } from "zod";
import { env } from "../env.ts";
import { toErrorResponse } from "./error-map.ts";

type Params = Record<string, string>;

export interface RouteContext<B> {
  req: Request;
  params: Params;
  body: B;
  rawBody: Uint8Array;
}

/**
 * The one builder every REST route goes through (conventions rule 5): it enforces the body size
 * limit, parses JSON against the route's schema, checks UUID path params, and maps every error to
 * {error: {code, message}}. Authentication is the handler's first line, so no route can forget
 * that it has to choose one.
 */
export function route<S extends z.ZodType | undefined>(def: {
  body?: S;
  uuidParams?: string[];
  maxBytes?: number;
  handler: (ctx: RouteContext<S extends z.ZodType ? z.infer<S> : undefined>) => Promise<Response>;
}) {
  return async (req: Request, ctx: { params: Promise<Params> }): Promise<Response> => {
    try {
      const params = (await ctx.params) ?? {};
      for (const p of def.uuidParams ?? []) {
        if (!UUID.test(params[p] ?? ""))
          throw new DomainError(
            p.startsWith("run")
              ? "RUN.NOT_FOUND"
              : p.startsWith("repo")
                ? "REPO.NOT_FOUND"
                : p.startsWith("schedule")
                  ? "SCHEDULE.NOT_FOUND"
                  : p.startsWith("artifact")
                    ? "ARTIFACT.NOT_FOUND"
                    : "JOB.NOT_FOUND",
            `${p} is not a valid id`,
          );
      }
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
      return await def.handler({ req, params, body: body as never, rawBody });
    } catch (e) {
      return toErrorResponse(e);
    }
  };
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
