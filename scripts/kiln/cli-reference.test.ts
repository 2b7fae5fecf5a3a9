import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { renderCliReference } from "./cli-reference.ts";
import { commands } from "./registry.ts";

// docs/cli.md is generated (npm run docs:cli); this renders it in memory and compares, never writing.
const docPath = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../docs/cli.md");

describe("docs/cli.md", () => {
  it("is exactly what the CLI's usage strings render (run `npm run docs:cli` after changing a command)", () => {
    expect(readFileSync(docPath, "utf8")).toBe(renderCliReference(commands));
  });

  it("lists every command, and a changed usage string changes the rendering (the check can fail)", () => {
    const rendered = renderCliReference(commands);
    for (const c of commands) expect(rendered).toContain(`npm run kiln -- ${c.usage.trimEnd()}`);
    const [first, ...rest] = commands;
    if (!first) throw new Error("no CLI commands registered");
    const drifted = renderCliReference([{ ...first, usage: `${first.usage} --a-new-flag` }, ...rest]);
    expect(drifted).not.toBe(rendered);
  });
});
