import { DomainError } from "@kiln/domain";
import {
  checkCloneUrl,
  isCloneUrlError,
  prepareCloneUrl,
  redactCredentials,
  runGit,
  type SourcePolicy,
} from "@kiln/oci";

/**
 * The commit a branch points at on the forge right now (`git ls-remote`), under the same clone-URL
 * policy as every other fetch (docs/adr/0017). A scheduled slot runs exactly this commit.
 */
export async function resolveBranchHead(
  policy: SourcePolicy,
  cloneUrl: string,
  branch: string,
  timeoutMs = 30_000,
  /** The repo's forge credential for a private repo (issue 28); into git's environment only. */
  credential?: () => Promise<{ username: string; password: string } | null>,
): Promise<string> {
  const shown = redactCredentials(cloneUrl);
  const ref = `refs/heads/${branch}`;
  let out: string;
  try {
    checkCloneUrl(cloneUrl, policy);
    const remote = await prepareCloneUrl(cloneUrl, policy);
    const cred = remote.protocol === "file" || !credential ? null : await credential();
    out = await runGit([...remote.gitConfig, "ls-remote", "--refs", "--", cloneUrl, ref], {
      what: "ls-remote",
      protocols: [remote.protocol],
      timeoutMs,
      ...(cred ? { httpAuth: { url: remote.url, ...cred } } : {}),
    });
  } catch (e) {
    if (isCloneUrlError(e)) throw new DomainError("REPO.CLONE_URL_REFUSED", e.message, { reason: e.code });
    throw new DomainError("REPO.SOURCE_UNAVAILABLE", `could not list ${ref} of ${shown}: ${errText(e).slice(0, 300)}`);
  }
  for (const line of out.split("\n")) {
    const [sha, name] = line.split("\t");
    if (name === ref && sha && /^[0-9a-f]{40}$|^[0-9a-f]{64}$/.test(sha)) return sha;
  }
  throw new DomainError("REPO.REF_NOT_FOUND", `${ref} does not exist in ${shown}`, { ref });
}

function errText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
