import type { RouteSpec } from "../route.ts";
import { openApiDocument } from "../schemas/resources.ts";
import type { ApiDocumentKind } from "./build-document.ts";

// The two routes that serve the documents describe themselves here, in a leaf: a document is built
// from every route module (app/route-manifest.ts), so the modules serving it cannot be among those it
// loads without an import cycle. Their route files spread these specs; the OpenAPI test holds each
// file's exported spec to its entry here.
export const DOCUMENT_ROUTES: Record<ApiDocumentKind, { dir: string; spec: RouteSpec }> = {
  public: {
    dir: "v1/openapi.json",
    spec: {
      path: "/v1/openapi.json",
      summary: "This API's OpenAPI 3.1 document, generated from the routes' own schemas",
      auth: "none",
      responses: { 200: { description: "the document", schema: openApiDocument } },
    },
  },
  agent: {
    dir: "v1/agent/openapi.json",
    spec: {
      path: "/v1/agent/openapi.json",
      summary: "The agent protocol's OpenAPI 3.1 document (host agents only; docs/adr/0029)",
      auth: "none",
      responses: { 200: { description: "the document", schema: openApiDocument } },
    },
  },
};
