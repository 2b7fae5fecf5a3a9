import { DomainError } from "@kiln/domain";
import { createAppJwt } from "./app-auth.ts";
import type { ForgeConfig } from "./forge-config.ts";
import { ForgeApiError, forgeRequest } from "./github-api.ts";

// Forge identity (issue 28, docs/adr/0028 "Amended (issue 28)"): what the forge itself says about a
// repository, asked with a credential Kiln holds, never taken from a payload the repo's org signs.

type Cfg = Pick<ForgeConfig, "apiUrl" | "requestTimeoutMs" | "app">;

const repoPath = (fullName: string) =>
  `/repos/${fullName
    .split("/")
    .map((s) => encodeURIComponent(s))
    .join("/")}`;

/**
 * The App installation GitHub has on `fullName` ("Get a repository installation for the
 * authenticated app", App JWT), or null when the App is not installed there (404).
 */
export async function repoInstallationId(cfg: Cfg, fullName: string, nowMs = Date.now()): Promise<number | null> {
  if (!cfg.app) return null;
  try {
    const r = await forgeRequest<{ id?: unknown }>(cfg, {
      method: "GET",
      path: `${repoPath(fullName)}/installation`,
      auth: `Bearer ${createAppJwt(cfg.app, nowMs)}`,
    });
    return typeof r.body?.id === "number" ? r.body.id : null;
  } catch (err) {
    if (err instanceof ForgeApiError && err.status === 404) return null;
    throw err;
  }
}

/**
 * Proof that a credential controls `fullName` ("Get a repository"): the forge shows it to the token
 * with push access (a token that can only read a public repo proves nothing), under the same name up
 * to case. Answers the forge's numeric repository id, which Kiln pins.
 */
export async function proveRepoControl(cfg: Cfg, fullName: string, auth: string): Promise<{ repositoryId: number }> {
  let body: { id?: unknown; full_name?: unknown; permissions?: { push?: unknown; admin?: unknown } };
  try {
    body = (await forgeRequest<typeof body>(cfg, { method: "GET", path: repoPath(fullName), auth })).body ?? {};
  } catch (err) {
    if (err instanceof ForgeApiError)
      throw new DomainError(
        "REPO.FORGE_UNVERIFIED",
        `the forge does not show ${fullName} to this credential (${err.message}): connecting a repo needs a token that can push to it`,
      );
    throw err;
  }
  const sameName = typeof body.full_name === "string" && body.full_name.toLowerCase() === fullName.toLowerCase();
  const canPush = body.permissions?.push === true || body.permissions?.admin === true;
  if (typeof body.id !== "number" || !sameName || !canPush)
    throw new DomainError(
      "REPO.FORGE_UNVERIFIED",
      `the forge shows ${fullName} to this credential without push access (or under another name): connecting a repo needs a token that can push to it`,
    );
  return { repositoryId: body.id };
}
