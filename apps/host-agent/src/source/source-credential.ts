// The repo's forge credential for a private checkout (issue 28, docs/adr/0028 amended), asked once
// per attempt with the job token, in parallel with the image and the sandbox (off the path to the
// first step). Only for http(s) clone URLs: a local (file://) repository never needs one. The value
// stays in this process and in the environment of the git fetch that uses it: it is never logged,
// never written to the job's log, never given to a step (the step env is built from the ticket and
// the secret broker alone).
import { callControl, type CallFailure } from "../artifacts/index.ts";
import type { ControlClient, JobTicket } from "../control-client.ts";
import type { Logger } from "@kiln/logger";
import type { SourceCredential } from "./git-checkout.ts";

export type SourceCredentialResult =
  | { kind: "ready"; credential: SourceCredential | null; reason: string | null }
  | { kind: "failed"; failure: CallFailure };

export async function fetchSourceCredential(deps: {
  client: ControlClient;
  ticket: JobTicket;
  log: Logger;
  signal: AbortSignal;
}): Promise<SourceCredentialResult> {
  const { client, ticket, log, signal } = deps;
  if (!/^https?:\/\//i.test(ticket.source.cloneUrl)) return { kind: "ready", credential: null, reason: null };
  const res = await callControl(
    "fetch source credential",
    (s) => client.fetchSourceCredential(ticket.jobId, ticket.jobToken, ticket.epoch, { timeoutMs: 15_000, signal: s }),
    { signal, log, attempts: 4 },
  );
  if (!res.ok) {
    // A control plane older than this agent has no such route: check out as before.
    if (res.failure.kind === "error" && res.failure.status === 404)
      return { kind: "ready", credential: null, reason: "the control plane offers no source credentials" };
    return { kind: "failed", failure: res.failure };
  }
  const { credential, reason } = res.data;
  // Whether one was given, never what it is.
  log.info("source credential", { given: credential !== null });
  return {
    kind: "ready",
    credential: credential
      ? { username: credential.username, password: credential.password, scope: credential.scope }
      : null,
    reason,
  };
}
