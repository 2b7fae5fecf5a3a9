import { mkdir, stat } from "node:fs/promises";
import path from "node:path";
import { DomainError } from "@kiln/domain";
import { MIRROR_LOCK_COLLISION, serialiseByKey } from "../shared/serialise-by-key.ts";
import {
  checkCloneUrl,
  isCloneUrlError,
  prepareCloneUrl,
  redactCredentials,
  runGit,
  type PreparedCloneUrl,
  type SourcePolicy,
} from "@kiln/oci";

/** Where a manual trigger's ref check fetches (a bare mirror per repo) and which URLs it may fetch. */
export interface RefCheckSource {
  gitCacheDir: string;
  policy: SourcePolicy;
  timeoutMs?: number;
  /** The repo's forge credential for a private repo (issue 28); into git's environment only. */
  credential?: (repo: { id: string; cloneUrl: string }) => Promise<{ username: string; password: string } | null>;
}

/**
 * A manual trigger's commit must be reachable from the ref it names (issue 15): the ref decides
 * the trusted cache namespace the run writes, so a member must not bind entries for `main` from a
 * fork's head. Fetches the ref's current tip (with its history) from the repo into a bare mirror and
 * asks `git merge-base --is-ancestor`. Refusals are named: REPO.REF_NOT_FOUND, RUN.COMMIT_NOT_ON_REF,
 * REPO.CLONE_URL_REFUSED; a forge that cannot be reached is REPO.SOURCE_UNAVAILABLE (retry later).
 */
export async function checkCommitOnRef(
  source: RefCheckSource,
  repo: { id: string; cloneUrl: string },
  ref: string,
  commitSha: string,
): Promise<void> {
  const shown = redactCredentials(repo.cloneUrl);
  let remote: PreparedCloneUrl;
  try {
    checkCloneUrl(repo.cloneUrl, source.policy);
    remote = await prepareCloneUrl(repo.cloneUrl, source.policy);
  } catch (e) {
    if (isCloneUrlError(e)) throw new DomainError("REPO.CLONE_URL_REFUSED", e.message, { reason: e.code });
    throw new DomainError("REPO.SOURCE_UNAVAILABLE", `could not reach ${shown}: ${errText(e)}`);
  }
  const dir = path.join(source.gitCacheDir, `${repo.id}.git`);
  const cred = remote.protocol === "file" || !source.credential ? null : await source.credential(repo);
  const git = (args: string[], network: boolean) =>
    runGit([...(network ? remote.gitConfig : []), "-C", dir, ...args], {
      what: args[0] ?? "",
      protocols: network ? [remote.protocol] : [],
      timeoutMs: source.timeoutMs ?? 30_000,
      ...(network && cred ? { httpAuth: { url: remote.url, ...cred } } : {}),
    });
  await serialiseByKey(dir, async () => {
    try {
      await stat(path.join(dir, "HEAD"));
    } catch {
      await mkdir(dir, { recursive: true });
      await git(["init", "--bare", "-q"], false);
    }
    // The tip as the forge has it now, under a private name, so an older fetch never answers.
    const local = `refs/kiln-ref-check/${ref.slice("refs/".length)}`;
    for (let tryNo = 0; ; tryNo++) {
      const msg = await git(
        ["fetch", "-q", "--no-tags", "--force", "--", repo.cloneUrl, `+${ref}:${local}`],
        true,
      ).then(
        () => null,
        (e: unknown) => errText(e),
      );
      if (msg === null) break;
      if (MIRROR_LOCK_COLLISION.test(msg) && tryNo < 5) {
        await new Promise((r) => setTimeout(r, 50 + Math.random() * 150 * (tryNo + 1)));
        continue;
      }
      if (/couldn't find remote ref|no such remote ref|not our ref|invalid refspec/i.test(msg))
        throw new DomainError("REPO.REF_NOT_FOUND", `${ref} does not exist in ${shown}`, { ref });
      throw new DomainError("REPO.SOURCE_UNAVAILABLE", `could not fetch ${ref} from ${shown}: ${msg.slice(0, 300)}`);
    }
    const onRef = () =>
      new DomainError("RUN.COMMIT_NOT_ON_REF", `commit ${commitSha} is not reachable from ${ref}`, {
        ref,
        commit_sha: commitSha,
      });
    const known = await git(["cat-file", "-e", `${commitSha}^{commit}`], false).then(
      () => true,
      () => false,
    );
    // The ref's whole history was just fetched: a commit the mirror still lacks is not on it.
    if (!known) throw onRef();
    try {
      await git(["merge-base", "--is-ancestor", commitSha, local], false);
    } catch (e) {
      if (/exited with code 1$/.test(errText(e))) throw onRef();
      throw new DomainError(
        "REPO.SOURCE_UNAVAILABLE",
        `could not check ${ref} in ${shown}: ${errText(e).slice(0, 300)}`,
      );
    }
  });
}

function errText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
