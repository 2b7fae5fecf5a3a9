import type { TrustClass } from "../tenants/index.ts";
import {
  formatHostPattern,
  matchesHostPattern,
  normalizeHost,
  parseHostPattern,
  type HostPattern,
} from "./host-pattern.ts";

// The egress decision (seed 000 section 11, issue 3): a sandbox's only way out is the host's proxy,
// and the proxy asks this function about every destination. Untrusted runs reach nothing, whatever
// the org's allow-list says; trusted runs reach the org's allow-list. The platform's own services
// (control plane, object store, database, Redis) are reachable by no sandbox: the agent moves every
// byte a job needs from them (checkout, artifacts, caches, logs), so a hostile step has no platform
// endpoint to probe (issue 15, docs/adr/0019).

export type EgressDecisionReason =
  | "allow_list"
  | "untrusted_run"
  | "not_on_allow_list"
  | "internal_address"
  | "invalid_host";

export type EgressDecision =
  | { allowed: true; reason: "allow_list"; matched: string }
  | { allowed: false; reason: Exclude<EgressDecisionReason, "allow_list">; message: string };

export interface EgressRequest {
  /** As the client named it (CONNECT authority or absolute URL host); normalised here. */
  host: string;
  port: number;
  trustClass: TrustClass;
  /** The org's allow-list entries (pattern text as stored). */
  allowList: readonly string[];
}

/** The exact line a denied client receives and the job log shows. */
export function egressDeniedMessage(host: string, port: number, trustClass: TrustClass): string {
  const shown = port === 443 || port === 80 ? host : `${host}:${port}`;
  return `kiln egress denied: ${shown} is not allowed for ${trustClass} runs`;
}

export function decideEgress(req: EgressRequest): EgressDecision {
  const dest = normalizeHost(req.host);
  const port = req.port;
  if (!dest || !Number.isInteger(port) || port < 1 || port > 65535) {
    return {
      allowed: false,
      reason: "invalid_host",
      message: egressDeniedMessage(req.host.slice(0, 255), port, req.trustClass),
    };
  }
  const target = { ...dest, port };
  const message = egressDeniedMessage(dest.host, port, req.trustClass);
  if (req.trustClass === "untrusted") return { allowed: false, reason: "untrusted_run", message };
  const listed = firstMatch(req.allowList, target);
  if (listed) return { allowed: true, reason: "allow_list", matched: listed };
  return { allowed: false, reason: "not_on_allow_list", message };
}

function firstMatch(patterns: readonly string[], target: Parameters<typeof matchesHostPattern>[1]): string | null {
  for (const text of patterns) {
    const p = tryParse(text);
    // A malformed stored pattern matches nothing rather than failing every request.
    if (p && matchesHostPattern(p, target)) return formatHostPattern(p);
  }
  return null;
}

function tryParse(text: string): HostPattern | null {
  try {
    return parseHostPattern(text);
  } catch {
    return null;
  }
}

/**
 * The second check, after the proxy resolved an allowed name: a name allowed by the org's list
 * must not lead to an internal address (DNS pointing an allowed name at 127.0.0.1 or the cloud
 * metadata service, or the platform's own services), unless the host is configured to allow that
 * (on-premises mirrors). Whether an address is internal is the caller's one classifier, @kiln/oci's
 * `classifyAddress` (anything not "public"): issue 28 found a second, weaker copy here that missed
 * NAT64 (64:ff9b::/96), 198.18.0.0/15, 192.0.0.0/24 and hex-written IPv4-mapped IPv6.
 */
export function decideResolvedAddress(
  decision: EgressDecision,
  dest: { host: string; port: number; internal: boolean; trustClass: TrustClass; allowInternal: boolean },
): EgressDecision {
  if (!decision.allowed || dest.allowInternal || !dest.internal) return decision;
  return {
    allowed: false,
    reason: "internal_address",
    message: egressDeniedMessage(dest.host, dest.port, dest.trustClass),
  };
}

/** The `decision` column of egress_event (packages/db/test/state-constraints.test.ts pins it to the migration). */
export const EGRESS_DECISIONS = ["allowed", "denied"] as const;
export type EgressDecisionValue = (typeof EGRESS_DECISIONS)[number];
/** The `action` column of egress_rule_change. */
export const EGRESS_RULE_ACTIONS = ["allow", "remove"] as const;
export type EgressRuleAction = (typeof EGRESS_RULE_ACTIONS)[number];
