import { describe, expect, it } from "vitest";
import { declaredPathCause, linkInsideDirectory, pathIsWithin, publishSourceCause } from "./artifact-paths.ts";

describe("artifact source paths", () => {
  const ws = "/w/ws";
  const ok = {
    workspaceReal: ws,
    lexical: `${ws}/target/app.jar`,
    real: `${ws}/target/app.jar`,
    lexicalIsSymlinkOrHasSymlinkParent: false,
    kind: "file" as const,
  };
  it("accepts files and directories inside the workspace", () => {
    expect(publishSourceCause(ok)).toBeNull();
    expect(publishSourceCause({ ...ok, kind: "directory" })).toBeNull();
  });
  it("names each way out", () => {
    expect(publishSourceCause({ ...ok, lexical: "/w/wsx/a" })).toBe("artifact.path_outside_workspace");
    expect(publishSourceCause({ ...ok, real: null })).toBe("artifact.missing");
    expect(publishSourceCause({ ...ok, real: null, lexicalIsSymlinkOrHasSymlinkParent: true })).toBe(
      "artifact.symlink_escape",
    );
    expect(publishSourceCause({ ...ok, real: "/etc/passwd", lexicalIsSymlinkOrHasSymlinkParent: true })).toBe(
      "artifact.symlink_escape",
    );
    expect(publishSourceCause({ ...ok, kind: "other" })).toBe("artifact.unsupported_type");
    expect(declaredPathCause("../x")).toBe("artifact.path_outside_workspace");
    expect(declaredPathCause("/etc/passwd")).toBe("artifact.path_outside_workspace");
    expect(declaredPathCause("a/./b")).toBe("artifact.path_outside_workspace");
    expect(declaredPathCause("target/app.jar")).toBeNull();
  });
  it("compares whole path segments", () => {
    expect(pathIsWithin("/a/b", "/a/b")).toBe(true);
    expect(pathIsWithin("/a/b", "/a/b/c")).toBe(true);
    expect(pathIsWithin("/a/b", "/a/bc")).toBe(false);
    expect(linkInsideDirectory("/d", "/d/x")).toBe(true);
    expect(linkInsideDirectory("/d", "/e")).toBe(false);
  });
});
