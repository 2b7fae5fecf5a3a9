// Which registries Kiln talks to and how: one JSON map per process (KILN_REGISTRIES in the
// workers' and the host agent's env.ts), keyed by host[:port] exactly as image references write it.
//   {"registry.example.com": {"username": "ci", "password": "..."},
//    "127.0.0.1:5000": {}}
// Only these registries are reachable (docs/adr/0017-outbound-fetches-on-a-tenants-behalf.md): an
// image reference names a host, and without the list any tenant could make the workers and agents
// fetch from any host. Plain http is used only for loopback hosts (127.0.0.1, localhost, [::1]):
// credentials and unverified transport never cross a real network.
import { z } from "zod";
import { ImageError } from "./errors.ts";
import { permittedClasses, type AddressClass } from "./outbound/address-policy.ts";
import { isLoopbackHost } from "./reference.ts";
import type { HostPolicy } from "./registry-fetch.ts";

/** host[:port] as a URL writes it; `*.suffix` matches any name under suffix (CDNs), default port only. */
const hostPattern = z
  .string()
  .regex(/^(?:\*\.)?[A-Za-z0-9.-]+(?::\d{1,5})?$|^\[[0-9a-fA-F:]+\](?::\d{1,5})?$/, "must be host[:port] or *.suffix");

const entry = z
  .object({
    username: z.string().min(1).optional(),
    password: z.string().min(1).optional(),
    /** Loopback only: talk https instead of the default http (e.g. a TLS test registry). */
    tls: z.boolean().optional(),
    /** Where to send requests instead of https://<host> (a mirror); http only for loopback. */
    endpoint: z.url().optional(),
    /** Hosts whose token realm this registry may name (e.g. auth.docker.io). Its own host always may. */
    authHosts: z.array(hostPattern).optional(),
    /** Hosts this registry may redirect manifest/blob requests to (a CDN or object store). */
    redirectHosts: z.array(hostPattern).optional(),
    /** The registry's names may resolve to private (RFC 1918 / unique local) addresses. */
    privateNetwork: z.boolean().optional(),
    /** The platform's own registry: short names `kiln/<name>:<tag>` resolve here (docs/adr/0040). */
    platform: z.boolean().optional(),
  })
  .strict()
  .refine((e) => (e.username === undefined) === (e.password === undefined), {
    message: "username and password go together",
  })
  .refine((e) => !e.endpoint || e.endpoint.startsWith("https://") || isLoopbackHost(new URL(e.endpoint).host), {
    message: "endpoint must be https:// unless it is a loopback address",
  });

export const registryConfigSchema = z.record(z.string().min(1), entry);
export type RegistryConfig = z.infer<typeof registryConfigSchema>;

/** Parses the env var's JSON text; empty/unset means no configured registries. */
export function parseRegistryConfig(text: string | undefined): RegistryConfig {
  if (!text) return {};
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new Error(`KILN_REGISTRIES is not JSON: ${(err as Error).message}`, { cause: err });
  }
  return registryConfigSchema.parse(json);
}

/** Docker Hub's API, token service and blob CDN live on other hosts than its reference name. */
const WELL_KNOWN: Record<string, { baseUrl: string; authHosts: string[]; redirectHosts: string[] }> = {
  "docker.io": {
    baseUrl: "https://registry-1.docker.io",
    authHosts: ["auth.docker.io"],
    redirectHosts: ["production.cloudflare.docker.com"],
  },
};

export interface RegistryEndpoint {
  registry: string;
  baseUrl: string;
  credentials: { username: string; password: string } | null;
  /** Which hosts requests for this registry (redirect hops and token realms included) may reach. */
  hosts: HostPolicy;
}

export function registryEndpoint(config: RegistryConfig, registry: string): RegistryEndpoint {
  const e = Object.hasOwn(config, registry) ? config[registry] : undefined;
  if (!e)
    throw new ImageError(
      "IMAGE.REGISTRY_NOT_ALLOWED",
      `registry ${registry} is not one this installation uses (the operator lists registries in KILN_REGISTRIES)`,
    );
  const known = WELL_KNOWN[registry];
  const credentials = e.username && e.password ? { username: e.username, password: e.password } : null;
  let baseUrl = e.endpoint?.replace(/\/+$/, "") ?? known?.baseUrl ?? `https://${registry}`;
  if (!e.endpoint && isLoopbackHost(registry) && !e.tls) baseUrl = `http://${registry}`;
  if (baseUrl.startsWith("http://") && !isLoopbackHost(new URL(baseUrl).host)) {
    throw new ImageError("IMAGE.INSECURE", `refusing plain http to ${registry}: only loopback registries may use http`);
  }
  const patterns = [
    new URL(baseUrl).host,
    ...(e.endpoint ? [] : [registry]),
    ...(e.authHosts ?? known?.authHosts ?? []),
    ...(e.redirectHosts ?? known?.redirectHosts ?? []),
  ].map((p) => p.toLowerCase());
  return { registry, baseUrl, credentials, hosts: hostPolicy(patterns, e.privateNetwork === true) };
}

function hostPolicy(patterns: string[], privateNetwork: boolean): HostPolicy {
  const cache = new Map<string, ReadonlySet<AddressClass>>();
  return (url) => {
    const host = url.host.toLowerCase();
    if (url.protocol === "http:" && !isLoopbackHost(host)) return null;
    const match = patterns.some((p) =>
      p.startsWith("*.") ? !host.includes(":") && host.endsWith(p.slice(1)) : p === host,
    );
    if (!match) return null;
    let allowed = cache.get(host);
    if (!allowed) {
      allowed = permittedClasses(url.hostname, { privateNetwork });
      cache.set(host, allowed);
    }
    return { allowed };
  };
}
