import { createHash } from "node:crypto";
import { execFileSync } from "node:child_process";
import { chmod, mkdir, mkdtemp, readFile, rm, stat, symlink, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import * as tar from "tar";
import { freezeArtifact, spoolUnchanged } from "./freeze.ts";

let root = "";
let ws = "";
let spool = "";
beforeEach(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), "kiln-freeze-"));
  ws = path.join(root, "workspace");
  spool = path.join(root, "spool");
  await mkdir(ws);
  await mkdir(spool);
  await writeFile(path.join(root, "secret.txt"), "host secret");
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

const freeze = (p: string, name = "out") => freezeArtifact(ws, spool, { name, path: p });

describe("freezing outputs", () => {
  it("copies a file into a read-only spool and hashes the spooled bytes", async () => {
    await mkdir(path.join(ws, "target"));
    await writeFile(path.join(ws, "target/app.jar"), "jar bytes");
    const r = await freeze("target/app.jar");
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.artifact).toMatchObject({
      format: "file",
      sizeBytes: 9,
      sha256: createHash("sha256").update("jar bytes").digest("hex"),
    });
    // Later changes to the workspace cannot reach what will be uploaded.
    await writeFile(path.join(ws, "target/app.jar"), "changed!!");
    expect(await readFile(r.artifact.file, "utf8")).toBe("jar bytes");
    expect((await stat(r.artifact.file)).mode & 0o777).toBe(0o400);
  });

  it("publishes a directory as a tar, keeping links that stay inside it", async () => {
    await mkdir(path.join(ws, "dist/sub"), { recursive: true });
    await writeFile(path.join(ws, "dist/sub/a.txt"), "a");
    await symlink("sub/a.txt", path.join(ws, "dist/link"));
    const r = await freeze("dist");
    expect(r.ok && r.artifact.format).toBe("tar");
    if (!r.ok) return;
    const names: string[] = [];
    await tar.list({ file: r.artifact.file, onReadEntry: (e) => names.push(e.path) });
    expect(names.sort()).toEqual(["./", "./link", "./sub/", "./sub/a.txt"]);
  });

  it.each([
    ["../secret.txt", "artifact.path_outside_workspace"],
    ["/etc/passwd", "artifact.path_outside_workspace"],
    ["a/../../secret.txt", "artifact.path_outside_workspace"],
    ["missing.jar", "artifact.missing"],
  ])("refuses %s with %s", async (p, cause) => {
    expect(await freeze(p)).toMatchObject({ ok: false, cause });
  });

  it("refuses symlinks that escape the workspace, as the file or as a parent", async () => {
    await symlink(path.join(root, "secret.txt"), path.join(ws, "app.jar"));
    expect(await freeze("app.jar")).toMatchObject({ ok: false, cause: "artifact.symlink_escape" });
    await symlink(root, path.join(ws, "up"));
    expect(await freeze("up/secret.txt")).toMatchObject({ ok: false, cause: "artifact.symlink_escape" });
    await symlink("/nonexistent/target", path.join(ws, "dangling"));
    expect(await freeze("dangling")).toMatchObject({ ok: false, cause: "artifact.symlink_escape" });
  });

  it("allows a symlink that stays inside the workspace", async () => {
    await writeFile(path.join(ws, "real.jar"), "x");
    await symlink("real.jar", path.join(ws, "alias.jar"));
    expect(await freeze("alias.jar")).toMatchObject({ ok: true });
  });

  it("refuses a directory containing a link out of it, or a special file", async () => {
    await mkdir(path.join(ws, "dist"));
    await symlink(path.join(root, "secret.txt"), path.join(ws, "dist/leak"));
    expect(await freeze("dist")).toMatchObject({ ok: false, cause: "artifact.symlink_escape" });
    await rm(path.join(ws, "dist/leak"));
    execFileSync("mkfifo", [path.join(ws, "dist/pipe")]);
    expect(await freeze("dist")).toMatchObject({ ok: false, cause: "artifact.unsupported_type" });
    expect(await freeze("dist/pipe")).toMatchObject({ ok: false, cause: "artifact.unsupported_type" });
  });

  it("makes spool files readable by their owner only", async () => {
    await writeFile(path.join(ws, "f"), "1");
    await chmod(path.join(ws, "f"), 0o666);
    const r = await freeze("f");
    expect(r.ok && (await stat(r.artifact.file)).mode & 0o077).toBe(0);
  });
});

describe("the frozen copy's identity", () => {
  it("stays the same until the spool file is touched, and any change to it is seen", async () => {
    await writeFile(path.join(ws, "app.bin"), "frozen bytes");
    const r = await freeze("app.bin");
    if (!r.ok) throw new Error(r.message);
    expect(await spoolUnchanged(r.artifact)).toBe(true);
    // Same size and content written back, as a tampering process would try: ctime still moves.
    await chmod(r.artifact.file, 0o600);
    await writeFile(r.artifact.file, "frozen bytes");
    await chmod(r.artifact.file, 0o400);
    expect(await spoolUnchanged(r.artifact)).toBe(false);
    await rm(r.artifact.file);
    expect(await spoolUnchanged(r.artifact)).toBe(false);
  });
});
