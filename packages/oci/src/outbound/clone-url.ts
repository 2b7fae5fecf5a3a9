// Which clone URLs Kiln fetches from (docs/adr/0017-outbound-fetches-on-a-tenants-behalf.md). An org
// admin registers a repo's URL; the workers (workflow file at freeze) and the agents (checkout) then
// run git against it. Without a rule, `file:///…/other-tenant.git` reads another tenant's
// repository from the host's disk, `http://127.0.0.1:…` reaches the platform's own services,
// `ext::sh -c …` runs a command, and a forge's redirect goes wherever it likes.
//   - https:// to a host whose every address is public: always;
//   - file:// under the operator's local-repository root, and http(s) to loopback: only when the
//     operator enabled local repositories (KILN_LOCAL_REPOS_ROOT, as `npm run up` does for its demo);
//   - anything else (ssh, git, ext, scp-like, plain http to a real network, private addresses): no.
import { realpath } from "node:fs/promises";
import { isIP } from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { classifyAddress } from "./address-policy.ts";
import { AddressRefusedError, resolveChecked } from "./resolve-checked.ts";

export type CloneUrlErrorCode =
  | "SOURCE.INVALID_URL"
  | "SOURCE.SCHEME_NOT_ALLOWED"
  | "SOURCE.LOCAL_NOT_ENABLED"
  | "SOURCE.OUTSIDE_LOCAL_ROOT"
  | "SOURCE.ADDRESS_NOT_ALLOWED";

export class CloneUrlError extends Error {
  override name = "CloneUrlError";
  constructor(
    readonly code: CloneUrlErrorCode,
    message: string,
  ) {
    super(message);
  }
}

export function isCloneUrlError(err: unknown): err is CloneUrlError {
  return err instanceof CloneUrlError;
}

export interface SourcePolicy {
  /** KILN_LOCAL_REPOS_ROOT: absolute directory; null (the default) disables file:// and loopback. */
  localReposRoot: string | null;
}

/** The one git transport a URL may use: the value for GIT_ALLOW_PROTOCOL. */
export type GitProtocol = "https" | "http" | "file";

export interface CheckedCloneUrl {
  url: string;
  protocol: GitProtocol;
  /** For file:// URLs: the absolute path on this host. */
  localPath: string | null;
}

/** `https://user:token@host/x` -> `https://***@host/x`, wherever a URL appears in text. */
export function redactCredentials(text: string): string {
  return text.replace(/([a-z][a-z0-9+.-]*:\/\/)[^\s/@]+@/gi, "$1***@");
}

function refuse(code: CloneUrlErrorCode, raw: string, why: string): CloneUrlError {
  return new CloneUrlError(code, `clone URL ${JSON.stringify(redactCredentials(raw).slice(0, 300))} ${why}`);
}

const isLoopbackName = (hostname: string) => {
  const bare = hostname.replace(/^\[|\]$/g, "").toLowerCase();
  return bare === "localhost" || classifyAddress(bare) === "loopback";
};

/**
 * The checks that need no I/O: shape, scheme, literal addresses, the local root (lexically). Used
 * when a repo is registered, so a refused URL is named at once; `prepareCloneUrl` repeats them
 * before every git run and adds the ones that need the disk or DNS.
 */
export function checkCloneUrl(raw: string, policy: SourcePolicy): CheckedCloneUrl {
  // Git reads a leading dash as an option; whitespace and controls never belong in a URL.
  // A backslash is a slash to the URL parser but not to curl: the two would disagree on the host.
  if (raw.length === 0 || raw.length > 2048 || raw.startsWith("-") || /[\s\p{Cc}\\]/u.test(raw))
    throw refuse(
      "SOURCE.INVALID_URL",
      raw,
      "is empty, too long, or contains spaces, backslashes or control characters",
    );
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw refuse(
      "SOURCE.SCHEME_NOT_ALLOWED",
      raw,
      "is not an https:// URL (scp-like and transport:: forms are refused)",
    );
  }
  const local = policy.localReposRoot;
  switch (url.protocol) {
    case "https:":
    case "http:": {
      if (!url.hostname) throw refuse("SOURCE.INVALID_URL", raw, "names no host");
      const loopback = isLoopbackName(url.hostname);
      if (loopback && !local)
        throw refuse(
          "SOURCE.LOCAL_NOT_ENABLED",
          raw,
          "points at this host (loopback); the operator has not enabled local repositories (KILN_LOCAL_REPOS_ROOT)",
        );
      if (url.protocol === "http:" && !loopback)
        throw refuse("SOURCE.SCHEME_NOT_ALLOWED", raw, "uses plain http; clone URLs must be https://");
      const bare = url.hostname.replace(/^\[|\]$/g, "");
      // A literal address is judged here; a name's addresses when git is about to connect.
      if (isIP(bare) && !loopback && classifyAddress(bare) !== "public")
        throw refuse(
          "SOURCE.ADDRESS_NOT_ALLOWED",
          raw,
          `names a ${classifyAddress(bare)} address; clone URLs must reach public hosts`,
        );
      // Git gets the parsed, normalised form: what was checked is what it connects to.
      return { url: url.href, protocol: url.protocol === "https:" ? "https" : "http", localPath: null };
    }
    case "file:": {
      if (!local)
        throw refuse(
          "SOURCE.LOCAL_NOT_ENABLED",
          raw,
          "is a local path; the operator has not enabled local repositories (KILN_LOCAL_REPOS_ROOT)",
        );
      if (url.hostname && url.hostname !== "localhost") throw refuse("SOURCE.INVALID_URL", raw, "names a remote host");
      // Git reads a file URL's path its own way (no query, fragment or escapes): keep them out.
      if (/[?#%]/.test(raw)) throw refuse("SOURCE.INVALID_URL", raw, "has a query, fragment or escapes");
      let localPath: string;
      try {
        localPath = fileURLToPath(url);
      } catch {
        throw refuse("SOURCE.INVALID_URL", raw, "is not a valid file:// path");
      }
      if (!within(local, localPath))
        throw refuse("SOURCE.OUTSIDE_LOCAL_ROOT", raw, `is outside the local repository root ${local}`);
      // The decoded, normalised path itself: `..` after a symlink would resolve elsewhere for git.
      return { url: `file://${localPath}`, protocol: "file", localPath };
    }
    default:
      throw refuse(
        "SOURCE.SCHEME_NOT_ALLOWED",
        raw,
        `uses ${url.protocol.replace(/:$/, "")}; clone URLs must be https://`,
      );
  }
}

function within(root: string, p: string): boolean {
  const r = path.resolve(root);
  const rel = path.relative(r, path.resolve(p));
  return rel === "" || (!rel.startsWith("..") && !path.isAbsolute(rel));
}

export interface PreparedCloneUrl extends CheckedCloneUrl {
  /** `git -c` settings that pin this run: no redirects, the checked addresses, one protocol. */
  gitConfig: string[];
}

/**
 * Everything `checkCloneUrl` checks, then: a file:// path must still be under the root once
 * symlinks are resolved; an https host's every address must be public (loopback too when local
 * repositories are enabled), and git is pinned to exactly those addresses (http.curloptResolve), so
 * the name cannot resolve elsewhere between our check and git's connect. Redirects are not followed.
 */
export async function prepareCloneUrl(raw: string, policy: SourcePolicy): Promise<PreparedCloneUrl> {
  const checked = checkCloneUrl(raw, policy);
  const gitConfig = ["-c", "http.followRedirects=false", "-c", "protocol.ext.allow=never"];
  if (checked.localPath) {
    const root = await realpath(policy.localReposRoot!).catch(() => null);
    const real = await realpath(checked.localPath).catch(() => checked.localPath!);
    if (!root || !within(root, real))
      throw refuse(
        "SOURCE.OUTSIDE_LOCAL_ROOT",
        raw,
        `resolves outside the local repository root ${policy.localReposRoot}`,
      );
    // Git opens the path that was checked, not one a symlink could re-point in between.
    return { ...checked, url: `file://${real}`, localPath: real, gitConfig };
  }
  const url = new URL(raw);
  const allowed = new Set([
    "public" as const,
    ...(policy.localReposRoot && isLoopbackName(url.hostname) ? (["loopback"] as const) : []),
  ]);
  let addresses;
  try {
    addresses = await resolveChecked(url.hostname, allowed);
  } catch (err) {
    if (err instanceof AddressRefusedError)
      throw refuse("SOURCE.ADDRESS_NOT_ALLOWED", raw, `is refused: ${err.message}`);
    // Unresolvable now is not a refusal (the caller retries), but git must not resolve it itself:
    // its answer would be unchecked.
    throw new Error(
      `cannot resolve ${url.hostname}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
      {
        cause: err,
      },
    );
  }
  if (!isIP(url.hostname.replace(/^\[|\]$/g, ""))) {
    const port = url.port || (url.protocol === "https:" ? "443" : "80");
    const list = addresses.map((a) => (a.family === 6 ? `[${a.address}]` : a.address)).join(",");
    gitConfig.push("-c", `http.curloptResolve=${url.hostname}:${port}:${list}`);
  }
  return { ...checked, gitConfig };
}
