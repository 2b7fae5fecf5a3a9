// The version the agent reports to the fleet view: its package's, fixed at build time.
import pkg from "../../package.json" with { type: "json" };

export const AGENT_VERSION: string = pkg.version;
