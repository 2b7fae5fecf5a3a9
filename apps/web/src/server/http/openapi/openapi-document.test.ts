import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Validator } from "@seriousme/openapi-schema-validator";
import Ajv2020 from "ajv/dist/2020.js";
import { describe, expect, it } from "vitest";
import { buildOpenApiDocument, documentOf, loadRoutes, openApiPathOf } from "./build-document.ts";
import { ROUTE_MODULES } from "@/app/route-manifest.ts";
import { DOCUMENT_ROUTES } from "./document-routes.ts";

// The OpenAPI documents (docs/adr/0029) against the route files on disk, an outside validator and
// docs/api.md (the guide points at the served document instead of repeating it as a table). A route
// added on any branch without its manifest line and spec fails here (and its route() call without
// path/summary/auth/responses fails to typecheck).
const here = path.dirname(fileURLToPath(import.meta.url));
const appDir = path.resolve(here, "../../../app");
const repoRoot = path.resolve(here, "../../../../../..");

/** Directories (relative to src/app) holding a route.ts, except the dashboard's /api/trpc and /api/auth. */
function routeDirsOnDisk(dir = appDir): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...routeDirsOnDisk(full));
    else if (e.name === "route.ts") out.push(path.relative(appDir, dir).split(path.sep).join("/"));
  }
  return out.filter((d) => !d.startsWith("api/")).sort();
}

type Doc = { paths: Record<string, Record<string, unknown>> };
const operations = (doc: Doc) =>
  Object.entries(doc.paths).flatMap(([p, item]) => Object.keys(item).map((m) => `${m.toUpperCase()} ${p}`));

describe("OpenAPI documents", () => {
  it("the manifest lists exactly the route files on disk", () => {
    const documentDirs = Object.values(DOCUMENT_ROUTES).map((r) => r.dir);
    expect([...Object.keys(ROUTE_MODULES), ...documentDirs].sort()).toEqual(routeDirsOnDisk());
  });

  it("the routes serving the documents export exactly the specs document-routes.ts declares for them", async () => {
    const served = {
      public: (await import("@/app/v1/openapi.json/route.ts")).GET.spec,
      agent: (await import("@/app/v1/agent/openapi.json/route.ts")).GET.spec,
    };
    for (const kind of ["public", "agent"] as const) {
      expect(served[kind]).toEqual({ ...DOCUMENT_ROUTES[kind].spec, uuidParams: [] });
      expect(served[kind].path).toBe(openApiPathOf(DOCUMENT_ROUTES[kind].dir));
    }
  });

  it("every exported handler declares a spec whose path is its file's path", async () => {
    const routes = await loadRoutes(ROUTE_MODULES);
    expect(routes.length).toBeGreaterThanOrEqual(Object.keys(ROUTE_MODULES).length);
    const undocumented = routes.filter((r) => r.spec === null).map((r) => `${r.method} ${r.dir}`);
    expect(undocumented).toEqual([]);
    for (const r of routes) expect(`${r.method} ${r.spec?.path}`).toBe(`${r.method} ${openApiPathOf(r.dir)}`);
  });

  it("each document holds every route of its kind, and only those", async () => {
    const routes = await loadRoutes(ROUTE_MODULES);
    for (const kind of ["public", "agent"] as const) {
      const doc = (await buildOpenApiDocument(kind, ROUTE_MODULES)) as Doc;
      const want = routes
        .filter((r) => r.spec && documentOf(r.spec.path) === kind)
        .map((r) => `${r.method} ${r.spec?.path}`)
        .sort();
      expect(operations(doc).sort()).toEqual(want);
    }
  });

  it("both documents are valid OpenAPI 3.1 (@seriousme/openapi-schema-validator), every schema compiles as JSON Schema 2020-12", async () => {
    for (const kind of ["public", "agent"] as const) {
      const doc = await buildOpenApiDocument(kind, ROUTE_MODULES);
      const validator = new Validator();
      const res = await validator.validate(structuredClone(doc));
      expect(res.errors ?? []).toEqual([]);
      expect(res.valid).toBe(true);
      expect(validator.version).toBe("3.1");
      const ajv = new Ajv2020({ strict: false });
      ajv.addSchema(
        (doc as { components: { schemas: Record<string, unknown> } }).components.schemas.Error as object,
        "#/components/schemas/Error",
      );
      const walk = (node: unknown, at: string): void => {
        if (!node || typeof node !== "object") return;
        for (const [k, v] of Object.entries(node)) {
          if (k === "schema" && v && typeof v === "object" && !("$ref" in v)) {
            expect(() => ajv.compile(v as object), `${kind} ${at}`).not.toThrow();
          } else walk(v, `${at}/${k}`);
        }
      };
      walk((doc as Doc).paths, "");
    }
  });

  it("a validator that is given a broken document says so (the check above can fail)", async () => {
    const doc = structuredClone(await buildOpenApiDocument("public", ROUTE_MODULES)) as Record<string, unknown>;
    (doc.paths as Record<string, unknown>)["/v1/pools"] = { get: { responses: "nope" } };
    const res = await new Validator().validate(doc);
    expect(res.valid).toBe(false);
  });

  it("docs/api.md, the short guide beside the served document, names only operations the documents serve", async () => {
    const guide = readFileSync(path.join(repoRoot, "docs/api.md"), "utf8");
    const named = [...guide.matchAll(/`(GET|POST|PUT|PATCH|DELETE) (\/[^`?\s]*)/g)].map((m) => `${m[1]} ${m[2]}`);
    expect(named).toContain("GET /v1/openapi.json");
    const served = new Set<string>();
    for (const kind of ["public", "agent"] as const) {
      for (const op of operations((await buildOpenApiDocument(kind, ROUTE_MODULES)) as Doc)) served.add(op);
    }
    expect(named.filter((op) => !served.has(op))).toEqual([]);
  });
});
