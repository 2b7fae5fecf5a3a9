// Agent protocol versions (issue 22, ADR 0034). Agents send theirs at registration and at session
// start; the control plane serves the range [MIN, CURRENT]. An agent from before versions sent
// nothing and speaks version 1. Version 3 (issue 21) adds sealed artifact transfers: the agent
// offers `seal` when it opens an upload and opens sealed downloads; a version-2 agent still moves
// plaintext artifacts (its uploads are not crypto-shredded).
export const AGENT_PROTOCOL_VERSION: number = 3;
export const MIN_AGENT_PROTOCOL_VERSION: number = 1;

/** The error message naming both sides' versions, or null when the agent may connect. */
export function protocolIncompatibility(agentVersion: number | undefined): string | null {
  const v = agentVersion ?? 1;
  if (v >= MIN_AGENT_PROTOCOL_VERSION && v <= AGENT_PROTOCOL_VERSION) return null;
  const range =
    MIN_AGENT_PROTOCOL_VERSION === AGENT_PROTOCOL_VERSION
      ? `${AGENT_PROTOCOL_VERSION}`
      : `${MIN_AGENT_PROTOCOL_VERSION}..${AGENT_PROTOCOL_VERSION}`;
  const fix = v > AGENT_PROTOCOL_VERSION ? "upgrade the control plane or run an older agent" : "upgrade the agent";
  return `agent protocol version ${v} is not supported by this control plane (protocol ${range}): ${fix}`;
}

/** Registration tokens: short-lived by default, bounded above. */
export const REGISTRATION_TOKEN_TTL = { defaultMinutes: 60, maxMinutes: 7 * 24 * 60 } as const;

/** Pool and runner names (the migration's CHECK): an org pool is `<org>/<name>`. */
export const POOL_BASE_NAME = /^[a-z0-9][a-z0-9_.-]{0,62}$/;
export const RUNNER_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$/;

/** The stored name of an org's pool. */
export function orgPoolName(orgSlug: string, name: string): string {
  return `${orgSlug}/${name}`;
}
