import { describe, expect, it } from "vitest";
import { isDomainError } from "../shared/errors.ts";
import { decideEgress, decideResolvedAddress, egressDeniedMessage } from "./egress-policy.ts";
import { formatHostPattern, parseHostPattern } from "./host-pattern.ts";

const allowList = ["registry.npmjs.org", "*.github.com", "deb.debian.org:8080", "10.1.2.3", "[2001:db8::1]:443"];
const decide = (host: string, port: number, trustClass: "trusted" | "untrusted" = "trusted") =>
  decideEgress({ host, port, trustClass, allowList });

describe("decideEgress", () => {
  it.each([
    // host, port, trust, allowed, reason
    ["registry.npmjs.org", 443, "trusted", true, "allow_list"],
    ["REGISTRY.NPMJS.ORG.", 443, "trusted", true, "allow_list"],
    ["registry.npmjs.org", 80, "trusted", true, "allow_list"],
    ["registry.npmjs.org", 8443, "trusted", false, "not_on_allow_list"],
    ["api.github.com", 443, "trusted", true, "allow_list"],
    ["a.b.github.com", 443, "trusted", true, "allow_list"],
    ["github.com", 443, "trusted", false, "not_on_allow_list"],
    ["evilgithub.com", 443, "trusted", false, "not_on_allow_list"],
    ["github.com.evil.io", 443, "trusted", false, "not_on_allow_list"],
    ["deb.debian.org", 8080, "trusted", true, "allow_list"],
    ["deb.debian.org", 443, "trusted", false, "not_on_allow_list"],
    ["10.1.2.3", 443, "trusted", true, "allow_list"],
    ["[2001:db8::1]", 443, "trusted", true, "allow_list"],
    ["2001:db8::1", 443, "trusted", true, "allow_list"],
    ["example.org", 443, "trusted", false, "not_on_allow_list"],
    // The platform's own services are no exception: no sandbox reaches them (the agent moves the bytes).
    ["cp.kiln.test", 8443, "untrusted", false, "untrusted_run"],
    ["s3.kiln.test", 443, "untrusted", false, "untrusted_run"],
    ["s3.kiln.test", 443, "trusted", false, "not_on_allow_list"],
    // Untrusted runs ignore the allow-list entirely.
    ["registry.npmjs.org", 443, "untrusted", false, "untrusted_run"],
    ["api.github.com", 443, "untrusted", false, "untrusted_run"],
    // Garbage and numeric shorthands getaddrinfo would turn into addresses.
    ["127.1", 443, "trusted", false, "invalid_host"],
    ["0x7f000001", 443, "trusted", false, "invalid_host"],
    ["2130706433", 443, "trusted", false, "invalid_host"],
    ["0177.0.0.1", 443, "trusted", false, "invalid_host"],
    ["user@registry.npmjs.org", 443, "trusted", false, "invalid_host"],
    ["registry.npmjs.org/x", 443, "trusted", false, "invalid_host"],
    ["registry.npmjs.org", 0, "trusted", false, "invalid_host"],
    ["registry.npmjs.org", 70000, "trusted", false, "invalid_host"],
  ] as const)("%s:%i (%s) -> %s %s", (host, port, trust, allowed, reason) => {
    const d = decide(host, port, trust);
    expect(d.allowed).toBe(allowed);
    expect(d.reason).toBe(reason);
  });

  it("an address never matches a name rule, even the name's own address", () => {
    const d = decideEgress({
      host: "127.0.0.1",
      port: 443,
      trustClass: "trusted",
      allowList: ["localhost", "*.localhost"],
    });
    expect(d).toMatchObject({ allowed: false, reason: "not_on_allow_list" });
  });

  it("denials carry the named error line the job log shows", () => {
    expect(decide("example.org", 443, "trusted")).toMatchObject({
      message: "kiln egress denied: example.org is not allowed for trusted runs",
    });
    expect(decide("Registry.NPMjs.org", 443, "untrusted")).toMatchObject({
      message: "kiln egress denied: registry.npmjs.org is not allowed for untrusted runs",
    });
    expect(egressDeniedMessage("localhost", 4567, "trusted")).toBe(
      "kiln egress denied: localhost:4567 is not allowed for trusted runs",
    );
  });

  it("a malformed stored entry matches nothing instead of failing every request", () => {
    const d = decideEgress({
      host: "ok.example.com",
      port: 443,
      trustClass: "trusted",
      allowList: ["not a host", "ok.example.com"],
    });
    expect(d).toMatchObject({ allowed: true, matched: "ok.example.com" });
  });
});

describe("parseHostPattern", () => {
  it.each([
    ["API.Example.com.", "api.example.com"],
    ["*.Example.com:8443", "*.example.com:8443"],
    ["10.0.0.1:5000", "10.0.0.1:5000"],
    ["[2001:DB8::1]:443", "[2001:db8::1]:443"],
    ["localhost:3000", "localhost:3000"],
  ])("%s is stored as %s", (input, canonical) => {
    expect(formatHostPattern(parseHostPattern(input))).toBe(canonical);
  });

  it.each([
    "",
    "*",
    "*.com",
    "a.*.example.com",
    "example.com:0",
    "example.com:99999",
    "example.com:http",
    "http://example.com",
    "exa mple.com",
    "-bad.example.com",
    "127.1",
    "*.10.0.0.1",
  ])("%j is refused with REQUEST.INVALID", (input) => {
    let error: unknown = null;
    try {
      parseHostPattern(input);
    } catch (e) {
      error = e;
    }
    expect(isDomainError(error) && error.code).toBe("REQUEST.INVALID");
  });
});

describe("decideResolvedAddress", () => {
  const allowed = decide("registry.npmjs.org", 443);
  // Whether an address is internal is @kiln/oci's classifyAddress, applied by the proxy (issue 28).
  const dest = (address: string, allowInternal = false) => ({
    host: "registry.npmjs.org",
    port: 443,
    internal: !address.startsWith("104."),
    trustClass: "trusted" as const,
    allowInternal,
  });
  it("an allowed name that resolves to an internal address is denied", () => {
    expect(decideResolvedAddress(allowed, dest("127.0.0.1"))).toMatchObject({
      allowed: false,
      reason: "internal_address",
    });
    expect(decideResolvedAddress(allowed, dest("169.254.169.254"))).toMatchObject({
      allowed: false,
      reason: "internal_address",
    });
  });
  it("public addresses, and internal ones on hosts configured to allow them, pass", () => {
    expect(decideResolvedAddress(allowed, dest("104.16.0.1"))).toBe(allowed);
    expect(decideResolvedAddress(allowed, dest("10.0.0.5"))).toMatchObject({ reason: "internal_address" });
    expect(decideResolvedAddress(allowed, dest("127.0.0.1", true))).toBe(allowed);
  });
  it("a denial stays a denial", () => {
    const denied = decide("example.org", 443);
    expect(decideResolvedAddress(denied, dest("104.16.0.1"))).toBe(denied);
  });
});
