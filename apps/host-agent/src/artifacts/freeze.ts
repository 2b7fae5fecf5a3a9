// Freezes one declared output into the agent-owned spool before anything is hashed or uploaded
// (seed 000 section 12): the hash and the uploaded bytes are then the same bytes, whatever the
// workspace does afterwards. Files are copied (reflinked where the filesystem can); directories are
// packed as a tar (ADR 0007). Every way out of the workspace is refused with a named cause.
import { constants as fsConstants } from "node:fs";
import { chmod, copyFile, lstat, readdir, readlink, realpath, stat } from "node:fs/promises";
import path from "node:path";
import {
  declaredPathCause,
  linkInsideDirectory,
  MAX_ARTIFACT_BYTES,
  publishSourceCause,
  type ArtifactCause,
  type ArtifactFormat,
  type SourceKind,
} from "@kiln/domain";
import * as tar from "tar";
import { hashFile } from "./http-transfer.ts";

export interface FrozenArtifact {
  name: string;
  file: string;
  format: ArtifactFormat;
  sizeBytes: number;
  sha256: string;
  /** The spool file's identity when it was hashed (see spoolUnchanged). */
  stamp: string;
}

export type FreezeResult =
  | { ok: true; artifact: FrozenArtifact }
  | { ok: false; cause: ArtifactCause; message: string };

const refuse = (cause: ArtifactCause, message: string): FreezeResult => ({ ok: false, cause, message });

export async function freezeArtifact(
  workspaceDir: string,
  spoolDir: string,
  entry: { name: string; path: string },
): Promise<FreezeResult> {
  const what = `artifact ${JSON.stringify(entry.name)} (${JSON.stringify(entry.path)})`;
  if (declaredPathCause(entry.path))
    return refuse("artifact.path_outside_workspace", `${what}: the path must stay inside the workspace`);
  const workspaceReal = await realpath(workspaceDir);
  const lexical = path.join(workspaceReal, entry.path);
  const viaLink = await hasSymlinkComponent(workspaceReal, entry.path);
  const real = await realpath(lexical).catch(() => null);
  const kind = real ? await kindOf(real) : "missing";
  const cause = publishSourceCause({ workspaceReal, lexical, real, lexicalIsSymlinkOrHasSymlinkParent: viaLink, kind });
  if (cause) return refuse(cause, `${what}: ${describe(cause)}`);
  const source = real as string;
  const spoolFile = path.join(spoolDir, `${entry.name}.${kind === "directory" ? "tar" : "bin"}`);
  if (kind === "directory") {
    const bad = await findUnsafeEntry(source);
    if (bad) return refuse(bad.cause, `${what}: ${bad.relative}: ${describe(bad.cause)}`);
    await tar.create({ cwd: source, file: spoolFile, portable: true, follow: false, noDirRecurse: false }, ["."]);
  } else {
    const size = (await stat(source)).size;
    if (size > MAX_ARTIFACT_BYTES)
      return refuse("artifact.too_large", `${what}: ${size} bytes exceeds the ${MAX_ARTIFACT_BYTES}-byte limit`);
    // COPYFILE_FICLONE reflinks on filesystems that can and falls back to a plain copy.
    await copyFile(source, spoolFile, fsConstants.COPYFILE_EXCL | fsConstants.COPYFILE_FICLONE);
  }
  await chmod(spoolFile, 0o400);
  // Taken before hashing: any write, truncate or chmod after this point moves ctime.
  const stamp = await spoolStamp(spoolFile);
  const digest = await hashFile(spoolFile);
  if (digest.sizeBytes > MAX_ARTIFACT_BYTES)
    return refuse(
      "artifact.too_large",
      `${what}: ${digest.sizeBytes} bytes exceeds the ${MAX_ARTIFACT_BYTES}-byte limit`,
    );
  return {
    ok: true,
    artifact: { name: entry.name, file: spoolFile, format: kind === "directory" ? "tar" : "file", ...digest, stamp },
  };
}

async function spoolStamp(file: string): Promise<string> {
  const s = await stat(file, { bigint: true });
  return `${s.dev}:${s.ino}:${s.size}:${s.mtimeNs}:${s.ctimeNs}`;
}

/**
 * Whether the spool file is still the one that was hashed: same inode, size, mtime and ctime
 * (ctime moves on any change and cannot be set back from user space). The control plane may seal
 * on the store's part digests of the bytes the agent sent (ADR 0007), which vouch for those bytes
 * but not for the freeze-time SHA-256; this is what ties the two together on the agent.
 */
export async function spoolUnchanged(a: FrozenArtifact): Promise<boolean> {
  return (await spoolStamp(a.file).catch(() => "")) === a.stamp;
}

function describe(cause: ArtifactCause): string {
  switch (cause) {
    case "artifact.path_outside_workspace":
      return "the path leads outside the workspace";
    case "artifact.missing":
      return "no such file or directory after the steps ran";
    case "artifact.symlink_escape":
      return "a symbolic link leads outside the workspace (or dangles)";
    case "artifact.unsupported_type":
      return "only regular files and directories can be published";
    case "artifact.too_large":
      return "too large";
    default:
      return cause;
  }
}

async function kindOf(p: string): Promise<SourceKind> {
  const s = await stat(p).catch(() => null);
  if (!s) return "missing";
  return s.isFile() ? "file" : s.isDirectory() ? "directory" : "other";
}

async function hasSymlinkComponent(root: string, relative: string): Promise<boolean> {
  let cur = root;
  for (const part of relative.split("/")) {
    cur = path.join(cur, part);
    const s = await lstat(cur).catch(() => null);
    if (!s) return false;
    if (s.isSymbolicLink()) return true;
  }
  return false;
}

/** Walks a directory to publish: links must stay inside it, and only files, dirs and links may appear. */
async function findUnsafeEntry(dir: string): Promise<{ relative: string; cause: ArtifactCause } | null> {
  const stack = [dir];
  while (stack.length > 0) {
    const cur = stack.pop() as string;
    for (const e of await readdir(cur, { withFileTypes: true })) {
      const full = path.join(cur, e.name);
      const relative = path.relative(dir, full);
      if (e.isSymbolicLink()) {
        const target = path.resolve(path.dirname(full), await readlink(full));
        const resolved = (await realpath(full).catch(() => null)) ?? target;
        if (!linkInsideDirectory(dir, target) || !linkInsideDirectory(dir, resolved))
          return { relative, cause: "artifact.symlink_escape" };
      } else if (e.isDirectory()) {
        stack.push(full);
      } else if (!e.isFile()) {
        return { relative, cause: "artifact.unsupported_type" };
      }
    }
  }
  return null;
}
