import { DomainError } from "../shared/errors.ts";

// Host patterns of the egress allow-list (docs/adr/0013-mediated-egress.md):
//   api.example.com        exactly that host
//   *.example.com          any subdomain of example.com, at any depth (not example.com itself)
//   10.1.2.3, [2001:db8::1] exactly that address (an address never matches a name rule)
// each optionally followed by :port. Without a port an entry allows the web's default ports (443
// for TLS through CONNECT, 80 for plain HTTP) and nothing else.

export interface HostPattern {
  kind: "exact" | "suffix";
  /** Lowercased, no trailing dot; for `suffix` the part after "*." */
  host: string;
  port: number | null;
}

export type HostKind = "name" | "ipv4" | "ipv6";

const DEFAULT_PORTS: readonly number[] = [443, 80];

const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;
// A top-level label that starts with a letter: rules out every numeric shorthand getaddrinfo would
// turn into an address ("127.1", "0x7f000001", "2130706433"), which would bypass name rules.
const TLD = /^[a-z][a-z0-9-]{0,62}$/;
const IPV4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;
const IPV6 = /^[0-9a-f:.]{2,45}$/;

/** Lowercases, strips a trailing dot and IPv6 brackets, and says what kind of host it is (null: not a host). */
export function normalizeHost(raw: string): { host: string; kind: HostKind } | null {
  let h = raw.trim().toLowerCase();
  if (h.startsWith("[") && h.endsWith("]")) {
    h = h.slice(1, -1);
    return IPV6.test(h) && h.includes(":") ? { host: h, kind: "ipv6" } : null;
  }
  if (h.endsWith(".")) h = h.slice(0, -1);
  if (h.length === 0 || h.length > 253) return null;
  if (IPV4.test(h)) return { host: h, kind: "ipv4" };
  if (h.includes(":")) return IPV6.test(h) ? { host: h, kind: "ipv6" } : null;
  const labels = h.split(".");
  const tld = labels[labels.length - 1] ?? "";
  if (!labels.every((l) => LABEL.test(l)) || !TLD.test(tld)) return null;
  return { host: h, kind: "name" };
}

function parsePort(raw: string, input: string): number {
  const port = /^\d{1,5}$/.test(raw) ? Number(raw) : NaN;
  if (!(port >= 1 && port <= 65535))
    throw new DomainError("REQUEST.INVALID", `egress pattern ${JSON.stringify(input)}: port must be 1..65535`);
  return port;
}

/** Parses an allow-list entry; bad input is a REQUEST.INVALID naming what is wrong. */
export function parseHostPattern(input: string): HostPattern {
  const text = input.trim();
  if (text.length === 0 || text.length > 300)
    throw new DomainError("REQUEST.INVALID", "egress pattern must be 1..300 characters");
  let hostPart = text;
  let port: number | null = null;
  const bracketed = /^(\[[^\]]+\])(?::(.*))?$/.exec(text);
  if (bracketed) {
    hostPart = bracketed[1] ?? "";
    if (bracketed[2] !== undefined) port = parsePort(bracketed[2], input);
  } else if ((text.match(/:/g) ?? []).length === 1) {
    const i = text.lastIndexOf(":");
    hostPart = text.slice(0, i);
    port = parsePort(text.slice(i + 1), input);
  }
  if (hostPart.startsWith("*.")) {
    const suffix = normalizeHost(hostPart.slice(2));
    if (!suffix || suffix.kind !== "name")
      throw new DomainError(
        "REQUEST.INVALID",
        `egress pattern ${JSON.stringify(input)}: "*." must be followed by a host name`,
      );
    if (!suffix.host.includes("."))
      throw new DomainError(
        "REQUEST.INVALID",
        `egress pattern ${JSON.stringify(input)}: a wildcard must keep at least two labels (no "*.com")`,
      );
    return { kind: "suffix", host: suffix.host, port };
  }
  if (hostPart.includes("*"))
    throw new DomainError(
      "REQUEST.INVALID",
      `egress pattern ${JSON.stringify(input)}: "*" is only allowed as a leading "*." label`,
    );
  const exact = normalizeHost(hostPart);
  if (!exact)
    throw new DomainError("REQUEST.INVALID", `egress pattern ${JSON.stringify(input)}: not a host name or IP address`);
  return { kind: "exact", host: exact.host, port };
}

/** The canonical text of a pattern (what is stored, so "API.example.com." and "api.example.com" are one entry). */
export function formatHostPattern(p: HostPattern): string {
  const host = p.kind === "suffix" ? `*.${p.host}` : p.host.includes(":") ? `[${p.host}]` : p.host;
  return p.port === null ? host : `${host}:${p.port}`;
}

/** Does `pattern` admit the (already normalised) destination? */
export function matchesHostPattern(
  pattern: HostPattern,
  dest: { host: string; kind: HostKind; port: number },
): boolean {
  const portOk = pattern.port === null ? DEFAULT_PORTS.includes(dest.port) : pattern.port === dest.port;
  if (!portOk) return false;
  if (pattern.kind === "exact") return pattern.host === dest.host;
  // Suffix rules are name rules: an address literal never matches one.
  return dest.kind === "name" && dest.host.endsWith(`.${pattern.host}`);
}
