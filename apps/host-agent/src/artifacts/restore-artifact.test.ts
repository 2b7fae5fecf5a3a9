import { mkdir, mkdtemp, realpath, rm, symlink } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { resolveRestoreTarget } from "./restore-artifact.ts";

let root = "";
let ws = "";
beforeEach(async () => {
  root = await realpath(await mkdtemp(path.join(os.tmpdir(), "kiln-restore-")));
  ws = path.join(root, "workspace");
  await mkdir(ws);
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

describe("where a restored artifact may land", () => {
  it("accepts new and existing paths inside the workspace", async () => {
    expect(await resolveRestoreTarget(ws, "inputs/app.jar")).toEqual({
      ok: true,
      path: path.join(ws, "inputs/app.jar"),
    });
    await mkdir(path.join(ws, "real"));
    await symlink("real", path.join(ws, "alias"));
    expect(await resolveRestoreTarget(ws, "alias/app.jar")).toEqual({ ok: true, path: path.join(ws, "real/app.jar") });
  });

  it("refuses lexical escapes and symlinks (from the checkout) that lead out", async () => {
    expect(await resolveRestoreTarget(ws, "../app.jar")).toMatchObject({
      ok: false,
      cause: "artifact.path_outside_workspace",
    });
    expect(await resolveRestoreTarget(ws, "/tmp/app.jar")).toMatchObject({
      ok: false,
      cause: "artifact.path_outside_workspace",
    });
    await symlink(root, path.join(ws, "inputs"));
    expect(await resolveRestoreTarget(ws, "inputs/app.jar")).toMatchObject({
      ok: false,
      cause: "artifact.symlink_escape",
    });
    await symlink("/etc/hostname", path.join(ws, "app.jar"));
    expect(await resolveRestoreTarget(ws, "app.jar")).toMatchObject({ ok: false, cause: "artifact.symlink_escape" });
  });
});
