import { describe, expect, it } from "vitest";
import { layoutJobGraph } from "./job-graph-layout.ts";

describe("layoutJobGraph", () => {
  it("places each job one column after the deepest job it needs", () => {
    const jobs = [
      { id: "a", index: 0, name: "build", needs: [] },
      { id: "b", index: 1, name: "lint", needs: [] },
      { id: "c", index: 2, name: "test", needs: ["build"] },
      { id: "d", index: 3, name: "deploy", needs: ["test", "lint"] },
    ];
    const l = layoutJobGraph(jobs);
    expect(l.columns).toEqual([["a", "b"], ["c"], ["d"]]);
    expect(l.edges).toEqual([
      ["a", "c"],
      ["c", "d"],
      ["b", "d"],
    ]);
    expect(l.position.get("d")).toEqual({ column: 2, row: 0 });
  });

  it("survives unknown needs and cycles without hanging", () => {
    const l = layoutJobGraph([
      { id: "a", index: 0, name: "a", needs: ["b", "ghost"] },
      { id: "b", index: 1, name: "b", needs: ["a"] },
    ]);
    expect(l.columns.flat().sort()).toEqual(["a", "b"]);
  });
});
