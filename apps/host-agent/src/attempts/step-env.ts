// The complete environment of a step. Built from scratch, never from the agent's own environment:
// the host credential and the job token must not be readable by user code.
import type { JobTicket } from "../control-client.ts";
import type { SandboxPaths } from "../sandboxes/index.ts";

const STEP_PATH = "/usr/local/bin:/usr/bin:/bin";

/**
 * `idTokenRequestToken`: the attempt's random request token for its ID token endpoint (docs/adr/0024);
 * KILN_ID_TOKEN_URL comes from the driver with the proxy address the sandbox sees.
 */
export function buildStepEnv(
  ticket: JobTicket,
  paths: SandboxPaths,
  /** Delivered secrets under their own names (issue 16); they win over a same-named workflow variable. */
  secrets: Readonly<Record<string, string>> = {},
  idTokenRequestToken?: string,
): Record<string, string> {
  return {
    PATH: STEP_PATH,
    HOME: paths.home,
    TMPDIR: paths.tmp,
    CI: "true",
    KILN: "true",
    KILN_RUN_ID: ticket.runId,
    KILN_JOB_ID: ticket.jobId,
    KILN_JOB_NAME: ticket.job.name,
    KILN_ATTEMPT: String(ticket.epoch),
    KILN_WORKSPACE: paths.workspace,
    // The workflow's own env comes last and may override the defaults above (as on other CI systems).
    ...ticket.job.env,
    ...secrets,
    // Not overridable: a workflow value here could only break the endpoint for its own steps.
    ...(idTokenRequestToken ? { KILN_ID_TOKEN_REQUEST_TOKEN: idTokenRequestToken } : {}),
  };
}
