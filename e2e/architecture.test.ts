// The package graph three ways, held together (issue 29): the table in docs/architecture.md, the
// app-graph-* and package-graph-* rules of .dependency-cruiser.cjs (which check the real imports), and
// each workspace's package.json (which knip holds to its imports). And the workspace graph turbo reads
// (dependencies and devDependencies) has no cycle: turbo warned about testkit <-> db on every run.
import { readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const WORKSPACES = ["apps", "packages"].flatMap((dir) =>
  readdirSync(path.join(root, dir), { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .map((e) => `${dir}/${e.name}`),
);

type Manifest = { name: string; dependencies?: Record<string, string>; devDependencies?: Record<string, string> };
const manifest = (ws: string): Manifest =>
  JSON.parse(readFileSync(path.join(root, ws, "package.json"), "utf8")) as Manifest;
const kiln = (deps: Record<string, string> | undefined): string[] =>
  Object.keys(deps ?? {})
    .filter((d) => d.startsWith("@kiln/"))
    .map((d) => d.slice("@kiln/".length))
    .sort();

/** docs/architecture.md's "| from | may import |" table: workspace -> allowed workspaces. */
function documentedGraph(): Map<string, string[]> {
  const doc = readFileSync(path.join(root, "docs/architecture.md"), "utf8");
  const at = doc.indexOf("| from | may import |");
  const table = doc.slice(at, doc.indexOf("\n\n", at));
  const rows = new Map<string, string[]>();
  for (const m of table.matchAll(/^\| `((?:apps|packages)\/[a-z-]+)` \| ([^|]+) \|$/gm)) {
    const names = (m[2] ?? "").split(";")[0] ?? "";
    const allowed = /^(nothing|no workspace)/.test(names.trim()) ? [] : names.split(",").map((s) => s.trim());
    rows.set(m[1] ?? "", allowed.sort());
  }
  return rows;
}

/** The allowed lists of the app-graph-* and package-graph-* rules. */
function cruiserGraph(): Map<string, string[]> {
  const config = createRequire(import.meta.url)(path.join(root, ".dependency-cruiser.cjs")) as {
    forbidden: { name: string; to: { pathNot?: string[] } }[];
  };
  const rows = new Map<string, string[]>();
  for (const rule of config.forbidden) {
    const m = /^(app|package)-graph-(.+)$/.exec(rule.name);
    if (!m) continue;
    const allowed = (rule.to.pathNot ?? []).slice(1).map((p) => /^\^packages\/([a-z-]+)\/$/.exec(p)?.[1] ?? p);
    rows.set(`${m[1] === "app" ? "apps" : "packages"}/${m[2]}`, allowed.sort());
  }
  return rows;
}

describe("the package graph", () => {
  it("docs/architecture.md's table and the dependency-cruiser rules name the same edges, for every workspace", () => {
    const documented = documentedGraph();
    expect([...documented.keys()].sort()).toEqual([...WORKSPACES].sort());
    expect(Object.fromEntries(cruiserGraph())).toEqual(Object.fromEntries(documented));
  });

  it("each workspace's package.json lists only workspaces its row allows, and every app lists its whole row", () => {
    const documented = documentedGraph();
    for (const ws of WORKSPACES) {
      const listed = kiln(manifest(ws).dependencies);
      const allowed = documented.get(ws) ?? [];
      expect(
        listed.filter((d) => !allowed.includes(d)),
        ws,
      ).toEqual([]);
      if (ws.startsWith("apps/")) expect(listed, ws).toEqual(allowed);
    }
  });

  it("the host agent depends on no control-plane package", () => {
    const deps = kiln(manifest("apps/host-agent").dependencies);
    expect(deps).not.toContain("engine");
    expect(deps).not.toContain("db");
  });

  it("the workspace graph turbo builds (dependencies and devDependencies) has no cycle", () => {
    const edges = new Map<string, string[]>();
    for (const ws of [...WORKSPACES, "e2e"]) {
      const m = manifest(ws);
      edges.set(m.name.replace(/^@kiln\//, ""), [...kiln(m.dependencies), ...kiln(m.devDependencies)]);
    }
    const cycles: string[] = [];
    const visit = (node: string, trail: string[]): void => {
      if (trail.includes(node)) {
        cycles.push([...trail.slice(trail.indexOf(node)), node].join(" -> "));
        return;
      }
      for (const next of edges.get(node) ?? []) visit(next, [...trail, node]);
    };
    for (const node of edges.keys()) visit(node, []);
    expect(cycles).toEqual([]);
  });
});
