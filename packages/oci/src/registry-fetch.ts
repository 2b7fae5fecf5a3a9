// The transport under RegistryClient: node:http(s) with a checking DNS lookup and redirects followed
// by hand, each hop re-checked. fetch() follows redirects itself and resolves names where we cannot
// see the answer, so a registry (or whoever answers for its name) could send us to any port on
// loopback, the metadata endpoint or the private network; here every hop must be a configured host
// and every address it resolves to must be permitted for that host (outbound/address-policy.ts).
import http from "node:http";
import https from "node:https";
import { isIP } from "node:net";
import { Readable } from "node:stream";
import { ImageError } from "./errors.ts";
import { classifyAddress, type AddressClass } from "./outbound/address-policy.ts";
import { AddressRefusedError, checkedLookup } from "./outbound/resolve-checked.ts";

interface RegistryRequestInit {
  method?: string;
  headers?: Record<string, string>;
  body?: Uint8Array;
  signal?: AbortSignal;
}

export type RegistryFetch = (url: string | URL, init?: RegistryRequestInit) => Promise<Response>;

/** The hosts one registry's requests may reach, and what each may resolve to. null: not allowed. */
export type HostPolicy = (url: URL) => { allowed: ReadonlySet<AddressClass> } | null;

const MAX_REDIRECTS = 5;
const REDIRECTS = new Set([301, 302, 303, 307, 308]);
const NULL_BODY = new Set([204, 205, 304]);
// Sockets are reused per host:port; each was connected through the checking lookup of its host.
const agents = {
  "http:": new http.Agent({ keepAlive: true }),
  "https:": new https.Agent({ keepAlive: true }),
};

export function registryFetch(policy: HostPolicy, describe: string): RegistryFetch {
  return async (input, init = {}) => {
    let url = new URL(input);
    let method = init.method ?? "GET";
    let body = init.body;
    const headers = { ...init.headers };
    for (let hop = 0; ; hop++) {
      const res = await requestOnce(url, { method, headers, body, signal: init.signal }, policy, describe);
      const location = res.headers.get("location");
      if (!REDIRECTS.has(res.status) || !location) return res;
      await res.body?.cancel();
      if (hop >= MAX_REDIRECTS)
        throw new ImageError("IMAGE.UNREACHABLE", `${describe}: more than ${MAX_REDIRECTS} redirects`);
      const next = new URL(location, url);
      // Credentials were given to this registry, not to wherever it points (a CDN, or an attacker).
      if (next.origin !== url.origin) delete headers.authorization;
      if (res.status === 303 || ((res.status === 301 || res.status === 302) && method === "POST")) {
        method = "GET";
        body = undefined;
      }
      url = next;
    }
  };
}

async function requestOnce(
  url: URL,
  init: RegistryRequestInit,
  policy: HostPolicy,
  describe: string,
): Promise<Response> {
  if (url.protocol !== "https:" && url.protocol !== "http:")
    throw new ImageError("IMAGE.HOST_NOT_ALLOWED", `${describe}: refusing ${url.protocol} URL`);
  const rule = policy(url);
  if (!rule)
    throw new ImageError(
      "IMAGE.HOST_NOT_ALLOWED",
      `${describe}: ${url.protocol}//${url.host} is not a host configured for this registry`,
    );
  const hostname = url.hostname.replace(/^\[|\]$/g, "");
  // Literal addresses never go through a lookup: check them here.
  if (isIP(hostname) && !rule.allowed.has(classifyAddress(hostname)))
    throw new ImageError(
      "IMAGE.ADDRESS_NOT_ALLOWED",
      `${describe}: ${url.host} is a ${classifyAddress(hostname)} address this registry is not configured to reach`,
    );
  const lib = url.protocol === "https:" ? https : http;
  return new Promise<Response>((resolve, reject) => {
    const req = lib.request(
      {
        protocol: url.protocol,
        hostname,
        port: url.port || undefined,
        path: `${url.pathname}${url.search}`,
        method: init.method ?? "GET",
        // identity: blobs are hashed as served, and nothing here decompresses a transfer encoding.
        headers: { "accept-encoding": "identity", ...init.headers },
        agent: agents[url.protocol as "http:" | "https:"],
        lookup: checkedLookup(rule.allowed),
        ...(init.signal ? { signal: init.signal } : {}),
      },
      (res) => {
        const headers = new Headers();
        for (let i = 0; i + 1 < res.rawHeaders.length; i += 2)
          headers.append(res.rawHeaders[i]!, res.rawHeaders[i + 1]!);
        const status = res.statusCode ?? 502;
        const empty = NULL_BODY.has(status) || init.method === "HEAD";
        if (empty) res.resume();
        resolve(
          new Response(empty ? null : (Readable.toWeb(res) as ReadableStream<Uint8Array>), {
            status,
            statusText: res.statusMessage ?? "",
            headers,
          }),
        );
      },
    );
    req.once("error", (err) => {
      if (err instanceof AddressRefusedError)
        return reject(new ImageError("IMAGE.ADDRESS_NOT_ALLOWED", `${describe}: ${err.message}`));
      reject(err);
    });
    req.end(init.body ? Buffer.from(init.body) : undefined);
  });
}
