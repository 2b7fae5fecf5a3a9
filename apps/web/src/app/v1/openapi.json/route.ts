import { ROUTE_MODULES } from "@/app/route-manifest.ts";
import { buildOpenApiDocument } from "@/server/http/openapi/build-document.ts";
import { DOCUMENT_ROUTES } from "@/server/http/openapi/document-routes.ts";
import { route } from "@/server/http/route.ts";

export const dynamic = "force-dynamic";

// Built once per process: it only changes with a deploy.
let doc: Promise<Record<string, unknown>> | null = null;

export const GET = route({
  ...DOCUMENT_ROUTES.public.spec,
  handler: async () => {
    doc ??= buildOpenApiDocument("public", ROUTE_MODULES);
    return Response.json(await doc, { headers: { "cache-control": "public, max-age=300" } });
  },
});
