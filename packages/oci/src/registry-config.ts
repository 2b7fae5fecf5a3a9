// Which registries Kiln talks to and how: one JSON map per process (KILN_REGISTRIES in the
// workers' and the host agent's env.ts), keyed by host[:port] exactly as image references write it.
//   {"registry.example.com": {"username": "ci", "password": "..."},
//    "127.0.0.1:5000": {}}
// Plain http is used only for loopback hosts (127.0.0.1, localhost, [::1]): credentials and
// unverified transport never cross a real network. Hosts not in the map are still reachable
// anonymously over https.
import { z } from "zod";
import { ImageError } from "./errors.ts";
import { isLoopbackHost } from "./reference.ts";

const entry = z
  .object({
    username: z.string().min(1).optional(),
    password: z.string().min(1).optional(),
    /** Loopback only: talk https instead of the default http (e.g. a TLS test registry). */
    tls: z.boolean().optional(),
    /** Where to send requests instead of https://<host> (a mirror); http only for loopback. */
    endpoint: z.url().optional(),
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
export type RegistryEntry = z.infer<typeof entry>;

/** Parses the env var's JSON text; empty/unset means no configured registries. */
export function parseRegistryConfig(text: string | undefined): RegistryConfig {
  if (!text) return {};
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new Error(`KILN_REGISTRIES is not JSON: ${(err as Error).message}`);
  }
  return registryConfigSchema.parse(json);
}

/** Docker Hub's API lives on another host than its reference name. */
const WELL_KNOWN: Record<string, string> = { "docker.io": "https://registry-1.docker.io" };

export interface RegistryEndpoint {
  registry: string;
  baseUrl: string;
  credentials: { username: string; password: string } | null;
}

export function registryEndpoint(config: RegistryConfig, registry: string): RegistryEndpoint {
  const e = config[registry];
  const credentials = e?.username && e.password ? { username: e.username, password: e.password } : null;
  let baseUrl = e?.endpoint?.replace(/\/+$/, "") ?? WELL_KNOWN[registry] ?? `https://${registry}`;
  if (!e?.endpoint && isLoopbackHost(registry) && !e?.tls) baseUrl = `http://${registry}`;
  if (baseUrl.startsWith("http://") && !isLoopbackHost(new URL(baseUrl).host)) {
    throw new ImageError("IMAGE.INSECURE", `refusing plain http to ${registry}: only loopback registries may use http`);
  }
  return { registry, baseUrl, credentials };
}
