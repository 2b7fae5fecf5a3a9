import { buildOpenApiDocument } from "@/server/http/openapi/build-document.ts";
import { route } from "@/server/http/route.ts";
import { openApiDocument } from "@/server/http/schemas/resources.ts";

export const dynamic = "force-dynamic";

let doc: Promise<Record<string, unknown>> | null = null;

export const GET = route({
  path: "/v1/agent/openapi.json",
  summary: "The agent protocol's OpenAPI 3.1 document (host agents only; docs/adr/0029)",
  auth: "none",
  responses: { 200: { description: "the document", schema: openApiDocument } },
  handler: async () => {
    doc ??= buildOpenApiDocument("agent");
    return Response.json(await doc, { headers: { "cache-control": "public, max-age=300" } });
  },
});
