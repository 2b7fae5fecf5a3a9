// What this agent reports as its build (issue 22: the fleet view shows it). Bumped with releases.
export const AGENT_VERSION = "kiln-host-agent/0.22.0";
