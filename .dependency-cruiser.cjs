// The dependency rules of conventions.md (Layering 1-4), checked on the real import graph rather than
// by grep. `npm run lint` runs it; docs/architecture.md draws the graph these rules allow.
const DOMAIN_TEST = "^packages/domain/src/.*(\\.test\\.ts|/test-[a-z-]+\\.ts)$";
const TEST_FILE = "(\\.test\\.tsx?$|/test-[a-z-]+\\.ts$|/testing/|-contract[a-z-]*\\.ts$)";

/** One rule per package: its production files import only the listed packages' code. */
function packageGraph(graph) {
  return Object.entries(graph).map(([pkg, allowed]) => ({
    name: `package-graph-${pkg}`,
    comment: `packages/${pkg} may import only: ${allowed.length ? allowed.join(", ") : "no other workspace"}`,
    severity: "error",
    from: { path: `^packages/${pkg}/src/`, pathNot: TEST_FILE },
    to: {
      path: "^(apps|packages|scripts|bench|e2e|test)/",
      pathNot: [`^packages/${pkg}/`, ...allowed.map((a) => `^packages/${a}/`)],
    },
  }));
}

/** One rule per app: its production files (src/, and the host agent's scripts/) import only these packages. */
function appGraph(graph) {
  return Object.entries(graph).map(([app, allowed]) => ({
    name: `app-graph-${app}`,
    comment: `apps/${app} may import only: ${allowed.join(", ")}`,
    severity: "error",
    from: { path: `^apps/${app}/(src|scripts)/`, pathNot: TEST_FILE },
    to: {
      path: "^(apps|packages|scripts|bench|e2e|test)/",
      pathNot: [`^apps/${app}/`, ...allowed.map((a) => `^packages/${a}/`)],
    },
  }));
}

const WS = "(apps/[^/]+|packages/[^/]+|e2e|scripts|bench|test)";

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: "domain-pure",
      comment:
        "packages/domain is pure TypeScript: no I/O, frameworks, Prisma, queues or other workspaces (conventions 1). zod and yaml only, and cron-parser (with its luxon) for schedules (ADR 0031): no I/O, always given the instant.",
      severity: "error",
      from: { path: "^packages/domain/src", pathNot: DOMAIN_TEST },
      to: { pathNot: ["^packages/domain/", "node_modules/(zod|yaml|cron-parser|luxon)/"] },
    },
    {
      name: "domain-tests-pure",
      comment: "Domain tests are pure too: vitest, fast-check, and node:crypto to build expected digests.",
      severity: "error",
      from: { path: DOMAIN_TEST },
      to: { pathNot: ["^packages/domain/", "node_modules/(zod|yaml|vitest|fast-check)/", "^(node:)?crypto$"] },
    },
    {
      name: "packages-not-apps",
      comment:
        "Direction is apps -> packages; a package never imports an app, scripts/, bench/ or e2e/ (conventions 2).",
      severity: "error",
      from: { path: "^packages/" },
      to: { path: "^(apps|scripts|bench|e2e|test)/" },
    },
    {
      name: "apps-not-apps",
      comment: "Apps talk to each other over the network, never by import.",
      severity: "error",
      from: { path: "^apps/([^/]+)/" },
      to: { path: "^apps/([^/]+)/", pathNot: "^apps/$1/" },
    },
    {
      name: "no-relative-cross-workspace",
      comment:
        "A workspace reaches another only through its package name (its index.ts / exports), never by a relative path.",
      severity: "error",
      from: { path: `^${WS}/` },
      to: { dependencyTypesNot: ["aliased-workspace"], path: `^${WS}/`, pathNot: "^$1/" },
    },
    {
      name: "capability-through-index",
      comment:
        "Inside a package, another capability's internals are reached only through its index.ts (conventions 4).",
      severity: "error",
      from: { path: "^(packages/[^/]+/src|apps/[^/]+/src)/([^/]+)/", pathNot: "^apps/web/" },
      to: {
        path: "^(packages/[^/]+/src|apps/[^/]+/src)/([^/]+)/",
        pathNot: ["^$1/$2/", "^$1/[^/]+/index\\.tsx?$", "^$1/([^/]+)/\\1-store\\.ts$", "^$1/shared/", "\\.css$"],
      },
    },
    {
      name: "store-imports-no-capability",
      comment:
        "A capability's <capability>/<capability>-store.ts holds its SQL (docs/adr/0039) and may be imported by other capabilities, so it imports none itself: no cycle can run through it.",
      severity: "error",
      from: { path: "^(packages/[^/]+/src)/([^/]+)/\\2-store\\.ts$" },
      to: { path: "^(packages/[^/]+/src)/([^/]+)/", pathNot: ["^$1/shared/"] },
    },
    {
      name: "shared-is-a-leaf",
      comment:
        "A package's shared/ is common ground every capability imports, so it imports no capability folder (nor config/): one such edge ties every capability into one cycle.",
      severity: "error",
      from: { path: "^(packages/[^/]+/src)/shared/" },
      to: { path: "^$1/[^/]+/", pathNot: "^$1/shared/" },
    },
    {
      name: "engine-config-types-only",
      comment:
        "packages/engine/src/config/ (the knobs and the env schema) imports every capability's defaults; the capabilities see it through types only, so no runtime cycle runs through it.",
      severity: "error",
      from: { path: "^packages/engine/src/(?!config/)[^/]+/", pathNot: TEST_FILE },
      to: { path: "^packages/engine/src/config/", dependencyTypesNot: ["type-only"] },
    },
    // The web app's folders are layers, not capabilities: app/ (Next's routes and pages) on top, then
    // components/ (the dashboard's UI) and trpc/ (its tRPC client and the pages' server-side caller),
    // and server/ (route builder, auth, tRPC procedures) at the bottom.
    {
      name: "web-server-not-ui",
      comment:
        "apps/web/src/server is the bottom layer: it never imports app/ (routes and pages), components/ or trpc/.",
      severity: "error",
      from: { path: "^apps/web/src/server/", pathNot: TEST_FILE },
      to: { path: "^apps/web/src/(app|components|trpc)/" },
    },
    {
      name: "web-components-below-app",
      comment: "Components are used by pages, never the other way round: components/ imports no app/ file.",
      severity: "error",
      from: { path: "^apps/web/src/components/", pathNot: TEST_FILE },
      to: { path: "^apps/web/src/app/" },
    },
    {
      name: "web-client-sees-server-types-only",
      comment:
        "Components and the browser's tRPC client reach server/ (and the server-side caller trpc/server.tsx) for types only: nothing of the server is bundled for the browser.",
      severity: "error",
      from: { path: "^apps/web/src/(components/|trpc/(client|query-client))", pathNot: TEST_FILE },
      to: { path: "^apps/web/src/(server/|trpc/server)", dependencyTypesNot: ["type-only"] },
    },
    {
      name: "not-to-unresolvable",
      comment:
        "Every import resolves (the web app's @/ alias through apps/web/tsconfig.json): an unresolved import is an edge no rule can see.",
      severity: "error",
      from: {},
      to: { couldNotResolve: true },
    },
    // The package graph (docs/architecture.md draws it): what each app's and package's production code
    // may import of the other workspaces. Tests may add @kiln/testkit and the engine's testing entry.
    // The host agent is the trusted host supervisor: no control-plane code (engine, db) runs in it.
    ...appGraph({
      web: ["engine", "db", "domain", "logger", "ui"],
      workers: ["engine", "db", "oci", "logger"],
      "host-agent": ["domain", "oci", "logger", "chunk-cipher"],
    }),
    ...packageGraph({
      domain: [],
      logger: [],
      "chunk-cipher": ["domain"],
      ui: ["domain"],
      oci: ["logger"],
      db: ["domain"],
      engine: ["domain", "db", "oci", "logger", "chunk-cipher"],
      testkit: ["db", "oci", "domain", "logger"],
    }),
    {
      name: "testkit-only-in-tests",
      comment:
        "Test and development infrastructure never ships: production code of apps and packages does not import it.",
      severity: "error",
      from: { path: "^(apps|packages)/[^/]+/src/", pathNot: [TEST_FILE, "^packages/testkit/"] },
      to: { path: "^packages/testkit/" },
    },
    {
      name: "no-circular",
      severity: "error",
      from: {},
      to: { circular: true, viaOnly: { dependencyTypesNot: ["type-only"] } },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    exclude: { path: ["\\.next/", "/generated/", "^\\.tools/"] },
    tsPreCompilationDeps: true,
    // apps/web's tsconfig is the one with paths (`@/*` -> apps/web/src/*); its other options are the
    // base's. The alias then resolves from any file: one outside the web app that used it would land in
    // apps/web and break apps-not-apps or packages-not-apps, so it cannot hide an edge.
    tsConfig: { fileName: "apps/web/tsconfig.json" },
    enhancedResolveOptions: {
      exportsFields: ["exports"],
      conditionNames: ["import", "require", "node", "default", "types"],
      extensions: [".ts", ".tsx", ".js", ".mjs", ".cjs", ".d.ts"],
    },
    combinedDependencies: true,
    preserveSymlinks: false,
  },
};
