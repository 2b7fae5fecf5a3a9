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
 * (on-premises mirrors).
 */
export function decideResolvedAddress(
  decision: EgressDecision,
  dest: { host: string; port: number; address: string; trustClass: TrustClass; allowInternal: boolean },
): EgressDecision {
  if (!decision.allowed || dest.allowInternal || !isInternalAddress(dest.address)) return decision;
  return {
    allowed: false,
    reason: "internal_address",
    message: egressDeniedMessage(dest.host, dest.port, dest.trustClass),
  };
}

/**
 * Addresses a destination name must not resolve to (unless the host allows internal ones): loopback,
 * private, link-local (cloud metadata), CGNAT, unspecified and multicast ranges. Without this an
 * allow-listed name whose DNS points at 127.0.0.1 would reach the host's own services.
 */
export function isInternalAddress(address: string): boolean {
  const a = address.toLowerCase();
  const v4 = /^(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(a.startsWith("::ffff:") ? a.slice(7) : a);
  if (v4) {
    const [o1, o2] = [Number(v4[1]), Number(v4[2])];
    return (
      o1 === 0 ||
      o1 === 10 ||
      o1 === 127 ||
      (o1 === 100 && o2 >= 64 && o2 <= 127) ||
      (o1 === 169 && o2 === 254) ||
      (o1 === 172 && o2 >= 16 && o2 <= 31) ||
      (o1 === 192 && o2 === 168) ||
      o1 >= 224
    );
  }
  return a === "::" || a === "::1" || /^f[cd]/.test(a) || /^fe[89ab]/.test(a) || a.startsWith("ff");
}

/** The `decision` column of egress_event (packages/db/test/state-constraints.test.ts pins it to the migration). */
export const EGRESS_DECISIONS = ["allowed", "denied"] as const;
export type EgressDecisionValue = (typeof EGRESS_DECISIONS)[number];
/** The `action` column of egress_rule_change. */
export const EGRESS_RULE_ACTIONS = ["allow", "remove"] as const;
export type EgressRuleAction = (typeof EGRESS_RULE_ACTIONS)[number];
