// Which credential and control plane this agent runs with: a registered state directory
// (issue 22) or, as before, KILN_AGENT_TOKEN from the operator.
import type { AgentEnv } from "../env.ts";
import { readAgentState } from "./state-file.ts";

export interface AgentIdentity {
  credential: string;
  controlUrl: string;
  /** The labels it was registered with, unless KILN_AGENT_LABELS says otherwise. */
  runnerLabels: string[];
  source: "state" | "env";
}

export async function resolveIdentity(env: AgentEnv): Promise<AgentIdentity> {
  if (env.KILN_AGENT_STATE_DIR !== undefined) {
    const state = await readAgentState(env.KILN_AGENT_STATE_DIR);
    return {
      credential: state.credential,
      controlUrl: env.controlUrlGiven ? env.KILN_CONTROL_URL : state.control_url,
      runnerLabels: env.KILN_AGENT_LABELS.length > 0 ? env.KILN_AGENT_LABELS : state.labels,
      source: "state",
    };
  }
  if (env.KILN_AGENT_TOKEN === undefined) throw new Error("KILN_AGENT_TOKEN or KILN_AGENT_STATE_DIR is required");
  return {
    credential: env.KILN_AGENT_TOKEN,
    controlUrl: env.KILN_CONTROL_URL,
    runnerLabels: env.KILN_AGENT_LABELS,
    source: "env",
  };
}
