import { isCloneUrlError, type SourcePolicy } from "@kiln/oci";
import { errorMessage, redactUrlCredentials } from "@kiln/logger";
import type { JobTicket } from "../control-client.ts";
import type { LogShipper } from "../logs/index.ts";
import type { Sandbox } from "../sandboxes/index.ts";
import { checkoutSource, type fetchSourceCredential, SourceAuthError } from "../source/index.ts";
import { platformFailure, type StopReason, type Verdict } from "../shared/verdict.ts";

/** What the checkout phase is given by its attempt. */
export interface CheckoutPhase {
  ticket: JobTicket;
  sandbox: Sandbox;
  /** KILN_LOCAL_REPOS_ROOT: which clone URLs a checkout may fetch from (docs/adr/0017). */
  source: SourcePolicy;
  gitMirrorDir: string | undefined;
  signal: AbortSignal;
  logs: LogShipper;
  /** The forge credential, asked for in parallel with the image and the sandbox. */
  sourceCredential: ReturnType<typeof fetchSourceCredential>;
  stop: (reason: StopReason, detail?: string) => void;
}

/**
 * The pinned commit into the sandbox's workspace: "ok", the verdict that ends the attempt, or null
 * when it was stopped meanwhile.
 */
export async function checkoutPhase(p: CheckoutPhase): Promise<"ok" | Verdict | null> {
  const cred = await p.sourceCredential;
  if (cred.kind === "failed") {
    if (cred.failure.kind === "fenced") p.stop("fenced", cred.failure.code);
    else if (cred.failure.kind === "cancelled") p.stop("cancel");
    if (cred.failure.kind !== "error") return null;
    return platformFailure(
      "source.credential_unavailable",
      `the control plane did not answer for the source credential: ${cred.failure.message}`,
    );
  }
  // Defence in depth: should git or the forge ever echo it, the job's log masks it like a secret.
  if (cred.credential)
    p.logs.maskSecrets([
      cred.credential.password,
      Buffer.from(`${cred.credential.username}:${cred.credential.password}`).toString("base64"),
    ]);
  try {
    await checkoutSource({
      dir: p.sandbox.hostWorkspaceDir,
      ...p.ticket.source,
      source: p.source,
      signal: p.signal,
      ...(p.gitMirrorDir ? { mirrorDir: p.gitMirrorDir } : {}),
      credential: cred.credential,
    });
  } catch (err) {
    if (p.signal.aborted) return null;
    return checkoutFailure(err, cred.reason, p.logs);
  }
  return p.signal.aborted ? null : "ok";
}

function checkoutFailure(err: unknown, credentialReason: string | null | undefined, logs: LogShipper): Verdict {
  // The forge refused the repo (private and no credential, or its credential revoked or wrong):
  // the repo's configuration, which only its admins can fix and no retry on another host would.
  // A user failure, never retried, with the fix in the job's log.
  if (err instanceof SourceAuthError) {
    const message = credentialReason ? `${err.message} (${credentialReason})` : err.message;
    logs.stderr(Buffer.from(`[kiln] source.auth_refused: ${message}\n`));
    return { outcome: "user_failure", cause: "source.auth_refused", message, exitCode: null };
  }
  // The repo's registration names a URL this host does not fetch from: no other host would either.
  // Policy, not the user's code nor the platform: blocked_by_policy (issue 20), never retried.
  if (isCloneUrlError(err))
    return {
      outcome: "blocked_by_policy",
      cause: "source.clone_url_refused",
      message: err.message,
      exitCode: null,
    };
  return platformFailure("source.checkout_failed", redactUrlCredentials(errorMessage(err)));
}
