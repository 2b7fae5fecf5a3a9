import { parseRegistryConfig, type RegistryConfig } from "@kiln/oci";

// Issue 30: agents learn the registries (and mirrors) from the control plane when their session
// starts, so an agent started by hand or registered into an org's pool pulls what the platform's own
// agents pull; before, the list lived only in the environment `npm run up` gives its children, and
// every other agent ended every image job blocked_by_policy. The agent merges it under its own
// KILN_REGISTRIES (an operator's local mirror wins for its host).

/** Parses the web app's KILN_REGISTRIES (the workers' format: JSON keyed by host[:port]). */
export function parseAgentRegistries(text: string | undefined): RegistryConfig {
  return parseRegistryConfig(text);
}

/**
 * The list a session's agent is told. Registry credentials go only to the platform's pools (hosts the
 * operator runs): an org's own pool is a machine that org controls, and the platform's pull secret
 * must not reach it. Such an agent still learns every registry, endpoint (mirror) and host rule, and
 * pulls anonymously or with credentials of its own KILN_REGISTRIES.
 */
export function registriesForAgents(config: RegistryConfig, poolOwnedByOrg: boolean): RegistryConfig {
  if (!poolOwnedByOrg) return config;
  const out: RegistryConfig = {};
  for (const [host, { username: _u, password: _p, ...rest }] of Object.entries(config)) out[host] = rest;
  return out;
}
