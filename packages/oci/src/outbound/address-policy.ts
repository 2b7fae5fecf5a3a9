// Which network addresses a fetch made on a tenant's behalf (an image reference, a token realm, a
// redirect, a clone URL) may connect to. A tenant chooses the name; the name's DNS answer or a
// registry's redirect chooses the address. Without this check either one reaches the platform's own
// services (loopback ports, the cloud metadata endpoint, the private network) from inside it.
import { BlockList, isIP } from "node:net";

export type AddressClass = "public" | "loopback" | "private" | "link-local" | "metadata" | "reserved";

/** Instance-metadata endpoints (AWS/GCP/Azure/OpenStack, ECS task role, Alibaba, AWS over IPv6). */
const METADATA = ["169.254.169.254", "169.254.170.2", "100.100.100.200", "fd00:ec2::254"];

function list(rules: [string, number, "ipv4" | "ipv6"][]): BlockList {
  const b = new BlockList();
  for (const [net, prefix, type] of rules) b.addSubnet(net, prefix, type);
  return b;
}

const LOOPBACK = list([
  ["127.0.0.0", 8, "ipv4"],
  ["::1", 128, "ipv6"],
]);
const PRIVATE = list([
  ["10.0.0.0", 8, "ipv4"],
  ["172.16.0.0", 12, "ipv4"],
  ["192.168.0.0", 16, "ipv4"],
  ["100.64.0.0", 10, "ipv4"], // carrier-grade NAT: as internal as RFC 1918 on most clouds
  ["fc00::", 7, "ipv6"], // unique local
]);
const LINK_LOCAL = list([
  ["169.254.0.0", 16, "ipv4"],
  ["fe80::", 10, "ipv6"],
]);
const RESERVED = list([
  ["0.0.0.0", 8, "ipv4"], // "this host": connects to loopback on Linux
  ["192.0.0.0", 24, "ipv4"],
  ["192.0.2.0", 24, "ipv4"],
  ["198.18.0.0", 15, "ipv4"],
  ["198.51.100.0", 24, "ipv4"],
  ["203.0.113.0", 24, "ipv4"],
  ["224.0.0.0", 4, "ipv4"],
  ["240.0.0.0", 4, "ipv4"],
  ["::", 128, "ipv6"],
  ["2001:db8::", 32, "ipv6"],
  ["ff00::", 8, "ipv6"],
]);

/** Classifies one IP literal (without brackets). IPv4 embedded in IPv6 is judged as the IPv4 address. */
export function classifyAddress(ip: string): AddressClass {
  const family = isIP(ip);
  if (family === 0) return "reserved";
  if (family === 6) {
    const v4 = embeddedIPv4(ip);
    if (v4) return classifyAddress(v4);
  }
  const type = family === 4 ? "ipv4" : "ipv6";
  const normal = type === "ipv6" ? ip.toLowerCase() : ip;
  if (METADATA.some((m) => isIP(m) === family && sameAddress(m, normal))) return "metadata";
  if (LOOPBACK.check(normal, type)) return "loopback";
  if (LINK_LOCAL.check(normal, type)) return "link-local";
  if (PRIVATE.check(normal, type)) return "private";
  if (RESERVED.check(normal, type)) return "reserved";
  return "public";
}

function sameAddress(a: string, b: string): boolean {
  const one = new BlockList();
  one.addAddress(a, isIP(a) === 4 ? "ipv4" : "ipv6");
  return one.check(b, isIP(b) === 4 ? "ipv4" : "ipv6");
}

/** `::ffff:a.b.c.d`, `::ffff:XXXX:XXXX` (mapped) and `64:ff9b::/96` (NAT64) carry an IPv4 address. */
function embeddedIPv4(ip: string): string | null {
  const groups = expandIPv6(ip);
  if (!groups) return null;
  const mapped = groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff;
  const nat64 = groups[0] === 0x64 && groups[1] === 0xff9b && groups.slice(2, 6).every((g) => g === 0);
  if (!mapped && !nat64) return null;
  const hi = groups[6]!;
  const lo = groups[7]!;
  return `${hi >> 8}.${hi & 0xff}.${lo >> 8}.${lo & 0xff}`;
}

function expandIPv6(ip: string): number[] | null {
  let text = ip.toLowerCase();
  const zone = text.indexOf("%");
  if (zone >= 0) text = text.slice(0, zone);
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const halves = text.split("::");
  if (halves.length > 2) return null;
  const head = halves[0] ? halves[0].split(":") : [];
  const tail = halves.length === 2 && halves[1] ? halves[1].split(":") : [];
  const fill = halves.length === 2 ? 8 - head.length - tail.length : 0;
  const all = [...head, ...Array<string>(Math.max(0, fill)).fill("0"), ...tail];
  if (all.length !== 8) return null;
  const nums = all.map((g) => Number.parseInt(g, 16));
  return nums.every((n) => Number.isInteger(n) && n >= 0 && n <= 0xffff) ? nums : null;
}

/**
 * What a host written in configuration may resolve to: a literal address permits exactly its own
 * class (the operator wrote it on purpose), `localhost` permits loopback, any other name permits
 * public addresses (and private ones when the operator says the service lives on the private
 * network). Metadata endpoints are never permitted: nothing Kiln fetches for a tenant lives there.
 */
export function permittedClasses(hostname: string, opts: { privateNetwork?: boolean } = {}): Set<AddressClass> {
  const bare = hostname.replace(/^\[|\]$/g, "").toLowerCase();
  const allowed = new Set<AddressClass>(["public"]);
  if (isIP(bare)) {
    const c = classifyAddress(bare);
    if (c !== "metadata") allowed.add(c);
  } else if (bare === "localhost") {
    allowed.add("loopback");
  } else if (opts.privateNetwork) {
    allowed.add("private");
  }
  return allowed;
}
