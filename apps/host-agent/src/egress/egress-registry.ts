// Where each attempt's egress listener is, for the sandbox drivers. The proxy registers an
// attempt's listener before the driver creates its sandbox and removes it after the sandbox is
// destroyed, so a driver asks here while it builds or runs the sandbox:
//   - process driver: egressSocketFor(attemptId) -> { path } (a unix socket the step's forwarder
//     inside its network namespace relays 127.0.0.1:3128 to),
//   - microvm driver: egressSocketFor(attemptId) too; create() links the VM's egress link to it, and
//     QEMU's `guestfwd=tcp:10.0.2.100:3128-cmd:<relay>` reaches it once per guest connection
//     (sandboxes/microvm/egress-relay.ts); the guest's proxy is http://10.0.2.100:3128.
//   - egressEndpointFor(attemptId) -> { port } serves a TCP listener on 127.0.0.1 (no driver uses it
//     now: a QEMU chardev guestfwd to a port shares one host connection between all guest
//     connections and never passes a close).
// Null means no egress for that attempt: the sandbox gets no way out at all.

import { ID_TOKEN_PATH } from "../identity/index.ts";

export type EgressListenerAddress = { kind: "tcp"; port: number } | { kind: "unix"; path: string };

/**
 * The proxy's address as each driver's sandbox sees it (process: the in-namespace forwarder,
 * sandboxes/process/egress-forwarder.ts; microvm: QEMU's guestfwd, sandboxes/microvm/qemu-command.ts).
 * A request for one of these is for the proxy itself, never proxied (the ID token endpoint).
 */
export const SANDBOX_PROXY_AUTHORITIES: ReadonlySet<string> = new Set(["127.0.0.1:3128", "10.0.2.100:3128"]);

const listeners = new Map<string, EgressListenerAddress>();

/** TCP port on 127.0.0.1 for QEMU's guestfwd (the microvm driver), or null. */
export function egressEndpointFor(attemptId: string): { port: number } | null {
  const l = listeners.get(attemptId);
  return l?.kind === "tcp" ? { port: l.port } : null;
}

/** Unix socket path for the process driver's in-namespace forwarder, or null. */
export function egressSocketFor(attemptId: string): { path: string } | null {
  const l = listeners.get(attemptId);
  return l?.kind === "unix" ? { path: l.path } : null;
}

/**
 * The proxy URL a step sees and the variables that point common tools at it, plus the attempt's
 * ID token endpoint on the same address (docs/adr/0024). The proxy's own host is in NO_PROXY, so
 * a request to the endpoint goes straight to the listener instead of being proxied to itself.
 */
export function egressProxyEnv(proxyUrl: string): Record<string, string> {
  const self = new URL(proxyUrl).hostname;
  const noProxy = [...new Set(["localhost", "127.0.0.1", "::1", self])].join(",");
  return {
    KILN_ID_TOKEN_URL: `${proxyUrl.replace(/\/+$/, "")}${ID_TOKEN_PATH}`,
    HTTP_PROXY: proxyUrl,
    HTTPS_PROXY: proxyUrl,
    http_proxy: proxyUrl,
    https_proxy: proxyUrl,
    // The sandbox's own loopback (services a job starts for itself) stays direct.
    NO_PROXY: noProxy,
    no_proxy: noProxy,
  };
}

export function registerEgressListener(attemptId: string, address: EgressListenerAddress): void {
  listeners.set(attemptId, address);
}

export function unregisterEgressListener(attemptId: string): void {
  listeners.delete(attemptId);
}
