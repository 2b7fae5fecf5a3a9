// The complete environment of a step. Built from scratch, never from the agent's own environment:
// the host credential and the job token must not be readable by user code.
import type { JobTicket } from "../control-client.ts";
import type { SandboxPaths } from "../sandboxes/index.ts";

const STEP_PATH = "/usr/local/bin:/usr/bin:/bin";

export function buildStepEnv(
  ticket: JobTicket,
  paths: SandboxPaths,
  /** Delivered secrets under their own names (issue 16); they win over a same-named workflow variable. */
  secrets: Readonly<Record<string, string>> = {},
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
  };
}
