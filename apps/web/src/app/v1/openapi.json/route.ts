import { buildOpenApiDocument } from "@/server/http/openapi/build-document.ts";
import { route } from "@/server/http/route.ts";
import { openApiDocument } from "@/server/http/schemas/resources.ts";

export const dynamic = "force-dynamic";

// Built once per process: it only changes with a deploy.
let doc: Promise<Record<string, unknown>> | null = null;

export const GET = route({
  path: "/v1/openapi.json",
  summary: "This API's OpenAPI 3.1 document, generated from the routes' own schemas",
  auth: "none",
  responses: { 200: { description: "the document", schema: openApiDocument } },
  handler: async () => {
    doc ??= buildOpenApiDocument("public");
    return Response.json(await doc, { headers: { "cache-control": "public, max-age=300" } });
  },
});
